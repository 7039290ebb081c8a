package import Foundation
package import NIOConcurrencyHelpers
import RelayTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `campaign-relay` executable built beside the test bundle, and a way to run it.
package enum RelayBinary {
    /// The path of the built `campaign-relay` executable.
    package static func path() throws -> String {
        let candidates = [
            Bundle.main.executableURL?.deletingLastPathComponent(),
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ].compactMap { $0?.appendingPathComponent("campaign-relay").path }
        let found = candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
        return try #require(found, "campaign-relay must be built next to the tests (looked in \(candidates))")
    }

    /// Everything a pipe delivered, once its writer closed it.
    package final class PipeContents: Sendable {
        package let data = NIOLockedValueBox<Data?>(nil)
    }

    /// What a finished run printed and returned.
    package struct Outcome {
        package var status: Int32
        package var stdout: String
        package var stderr: String
    }

    /// Runs the executable to completion on a thread of its own, optionally feeding `input` on
    /// standard input, so the waiting never holds one of the cooperative pool's threads: on two
    /// cores, two tests blocked in a synchronous run would starve an in-process emulator the
    /// children are talking to. (There is no synchronous form, so none can be called from a task.)
    ///
    /// Both pipes are drained on threads of their own, so a large output never blocks the child,
    /// and the wait has a deadline: a child still running after `seconds` is killed and the test
    /// records it, instead of stalling the whole run.
    package static func run(_ binary: String, _ arguments: [String], input: Data? = nil, seconds: Double = 300) async throws -> Outcome {
        let granted = TestBudget.seconds(seconds)
        let run = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try BoundedRun.runBlocking(binary, arguments, input: input, seconds: granted) })
            }.start()
        }
        let status: Int32
        switch run.ending {
        case .exited(let code), .signalled(let code): status = code
        case .timedOut:
            // Recorded here, in the test's task, so that the issue is the test's own.
            Issue.record(
                "\(binary) \(arguments) did not finish within \(granted) s\(TestBudget.note(requested: seconds, granted: granted)) and was killed")
            status = SIGKILL
        }
        return Outcome(status: status, stdout: run.stdout, stderr: run.stderr)
    }
}

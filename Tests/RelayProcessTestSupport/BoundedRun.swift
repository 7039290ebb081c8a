package import Foundation
import RelayTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A run of a child process with a deadline that reports how it ended — an exit status, a signal,
/// or the deadline — and leaves it to the caller to judge: a fault test must tell a crash (a
/// signal) from a documented failure (exit 1), and may retry once a start-up hang that libfiu's
/// own malloc wrapper can cause, which ``RelayBinary/run(_:_:input:seconds:)`` records as an issue.
package struct BoundedRun: Sendable {
    /// How the child ended.
    package enum Ending: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)
        /// Still running at the deadline, then killed (SIGKILL).
        case timedOut

        package var description: String {
            switch self {
            case .exited(let status): "exit \(status)"
            case .signalled(let signal): "killed by signal \(signal)"
            case .timedOut: "still running at the deadline"
            }
        }
    }

    package var ending: Ending
    package var stdout: String
    package var stderr: String
    package var seconds: Double

    /// Whether the child printed nothing at all: with ``Ending/timedOut``, the sign of a hang before
    /// `main` (the libfiu start-up deadlock), as opposed to one in the relay's own code.
    package var printedNothing: Bool { stdout.isEmpty && stderr.isEmpty }

    /// ``run(_:_:seconds:)``, once more when the first run hung silently before `main` (libfiu's
    /// start-up deadlock); `hangs` counts the retries.
    package static func runRetryingASilentHang(
        _ executable: String, _ arguments: [String], seconds: Double, hangs: inout Int
    ) async throws -> BoundedRun {
        let first = try await run(executable, arguments, seconds: seconds)
        guard first.ending == .timedOut, first.printedNothing else { return first }
        hangs += 1
        return try await run(executable, arguments, seconds: seconds)
    }

    /// Runs `executable` with `arguments` to its end or `seconds`, on a thread of its own (the
    /// cooperative pool stays free for in-process servers the child talks to).
    package static func run(_ executable: String, _ arguments: [String], seconds: Double) async throws -> BoundedRun {
        // Cut short when the test's time limit runs out first: the ending says so (timed out).
        let granted = TestBudget.seconds(seconds)
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try runBlocking(executable, arguments, seconds: granted) }) }.start()
        }
    }

    /// Runs `executable` to its end or `seconds` on the calling thread, optionally feeding `input`
    /// on standard input. Both pipes are drained on threads of their own, so a large output never
    /// blocks the child; a child still running at the deadline is killed (SIGKILL).
    package static func runBlocking(
        _ executable: String, _ arguments: [String], input: Data? = nil, seconds: Double, fileID: String = #fileID, filePath: String = #filePath,
        line: Int = #line, column: Int = #column
    ) throws -> BoundedRun {
        CooperativePool.refuseBlocking(
            "a run of \(executable) \(arguments.prefix(2))", fileID: fileID, filePath: filePath, line: line, column: column)
        let started = Date()
        let process = try SpawnedProcess(executable, arguments, input: input == nil ? .nullDevice : .pipe, output: .pipe, error: .pipe)
        let outputData = RelayBinary.PipeContents()
        let errorData = RelayBinary.PipeContents()
        for (descriptor, box) in [(process.standardOutput, outputData), (process.standardError, errorData)] {
            guard let descriptor else { continue }
            Thread {
                var data = Data()
                readPipe(descriptor) { data.append(contentsOf: $0) }
                close(descriptor)
                box.data.withLockedValue { $0 = data }
            }.start()
        }
        if let input, let writer = process.standardInput {
            // A child may stop reading early (a full log): its closed pipe must fail the write,
            // not kill the test process with SIGPIPE; and the write must not hold up the wait.
            signal(SIGPIPE, SIG_IGN)
            Thread {
                writeAll(input, to: writer)
                close(writer)
            }.start()
        }
        let deadline = started.addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { usleep(2_000) }
        let timedOut = process.isRunning
        if timedOut { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        var stdout: Data?
        var stderr: Data?
        while stdout == nil || stderr == nil {
            stdout = outputData.data.withLockedValue { $0 }
            stderr = errorData.data.withLockedValue { $0 }
            if stdout == nil || stderr == nil { usleep(1000) }
        }
        let ending: Ending =
            timedOut
            ? .timedOut : process.terminationReason == .uncaughtSignal ? .signalled(process.terminationStatus) : .exited(process.terminationStatus)
        return BoundedRun(
            ending: ending, stdout: String(decoding: stdout ?? Data(), as: UTF8.self), stderr: String(decoding: stderr ?? Data(), as: UTF8.self),
            seconds: Date().timeIntervalSince(started))
    }
}

import Foundation
import NIOConcurrencyHelpers
package import RelayTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A child process and what it printed so far (both streams), read on a thread of its own so the
/// test never blocks on a pipe; waits have deadlines, and a hung child fails the test.
package final class ChildProcess: Sendable {
    package let process: SpawnedProcess
    private let output = NIOLockedValueBox<String>("")

    /// Starts `binary` with `arguments`, and with `environment` added to the test's own; standard
    /// output and standard error go into one pipe, read into ``text``.
    package init(_ binary: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process = try SpawnedProcess(binary, arguments, environment: environment, output: .pipe, error: .sameAsOutput)
        guard let descriptor = process.standardOutput else { return }
        Thread { [self] in
            readPipe(descriptor) { bytes in self.output.withLockedValue { $0 += String(decoding: bytes, as: UTF8.self) } }
            close(descriptor)
        }.start()
    }

    package var text: String { output.withLockedValue { $0 } }

    /// The first capture of `pattern` in the output, waiting up to `seconds` for it.
    package func await(_ pattern: String, seconds: Double = 30) async throws -> String {
        try await Self.firstCapture(
            of: pattern, seconds: seconds, every: .milliseconds(20), in: { self.text }, of: process,
            place: "the output of \(process.arguments)", shown: { Substring($0) })
    }

    /// The first capture of `pattern` in what `text` returns, read every `interval` for up to
    /// `seconds` (cut by ``TestBudget``) or until `process` ends; records an issue naming `place`,
    /// with `shown` of the text, and throws ``Timeout`` when it does not come.
    static func firstCapture(
        of pattern: String, seconds: Double, every interval: Duration, in text: () -> String, of process: SpawnedProcess, place: String,
        shown: (String) -> Substring
    ) async throws -> String {
        let regex = try Regex(pattern)
        let granted = TestBudget.seconds(seconds)
        let deadline = Date().addingTimeInterval(granted)
        repeat {
            if let match = text().firstMatch(of: regex), let capture = match.output[1].substring { return String(capture) }
            if !process.isRunning { break }
            try await Task.sleep(for: interval)
        } while Date() < deadline
        let ended = process.isRunning ? "" : " (it has ended)"
        Issue.record(
            "waited \(granted) s for /\(pattern)/ in \(place)\(ended)\(TestBudget.note(requested: seconds, granted: granted)); it printed: \(shown(text()))"
        )
        throw Timeout()
    }

    /// Stops the child: SIGTERM, then waits up to 30 s for it to exit without holding a thread;
    /// a child still running then is killed (SIGKILL) and the test records it.
    package func stop() async {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        await exit(within: 30)
    }

    /// ``stop()`` for a `defer`, which cannot wait: SIGTERM now, and a thread of its own that waits
    /// up to 30 s for the exit and then kills the child (SIGKILL). Where the next step needs the
    /// child gone (its data directory read, its port reused), `await stop()` instead.
    package func stopWithoutWaiting() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        Thread { [self] in _ = self.waitForExit(seconds: 30) }.start()
    }

    /// Waits at most `seconds` for the child to exit, sleeping between checks (so the cooperative
    /// pool stays free for in-process servers the child talks to); a child still running then is
    /// killed (SIGKILL) and the test records it. Returns whether it exited by itself.
    @discardableResult
    package func exit(within seconds: Double) async -> Bool {
        let granted = TestBudget.seconds(seconds)
        if await process.exited(within: granted) { return true }
        kill(process.processIdentifier, SIGKILL)
        await process.exited()
        Issue.record(
            "\(process.arguments) did not exit within \(granted) s\(TestBudget.note(requested: seconds, granted: granted)) and was killed; it printed: \(text.suffix(2000))"
        )
        return false
    }

    /// ``exit(within:)`` for a thread of its own: blocks the calling thread, so the test support
    /// refuses it on the cooperative pool.
    @discardableResult
    package func waitForExit(seconds: Double, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column)
        -> Bool
    {
        CooperativePool.refuseBlocking(
            "waitForExit(seconds:) of \(process.arguments)", fileID: fileID, filePath: filePath, line: line, column: column)
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { usleep(5_000) }
        guard process.isRunning else { return true }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        Issue.record("\(process.arguments) did not exit within \(seconds) s and was killed; it printed: \(text.suffix(2000))")
        return false
    }

    package struct Timeout: Error {}
}

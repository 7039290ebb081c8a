import Foundation
package import RelayTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A child process whose standard output and error go to a file that outlives it: a relay killed
/// with SIGKILL, or a test stopped by its time limit, leaves its log where the report can point
/// (``ChildProcess`` keeps its output in memory only).
package final class LoggedChild: Sendable {
    package let process: SpawnedProcess
    /// The file the child writes (truncated at the start).
    package let logPath: String

    /// Starts `binary` with `arguments`, writing everything it prints to `logPath`.
    package init(_ binary: String, _ arguments: [String], logPath: String) throws {
        self.logPath = logPath
        process = try SpawnedProcess(binary, arguments, output: .file(logPath), error: .sameAsOutput)
    }

    /// What the child printed so far (empty when the file cannot be read).
    package var text: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The first capture of `pattern` in the log, waiting up to `seconds` for it; records an issue
    /// and throws ``ChildProcess/Timeout`` when it does not come or the child ends first.
    package func await(_ pattern: String, seconds: Double = 60) async throws -> String {
        try await ChildProcess.firstCapture(
            of: pattern, seconds: seconds, every: .milliseconds(50), in: { self.text }, of: process, place: logPath, shown: { $0.suffix(3000) })
    }

    /// SIGKILL, and waits for the exit.
    package func kill9() async {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        await process.exited()
    }

    /// SIGTERM, then up to 30 s for the exit; a child still running then is killed and the test
    /// records it.
    package func stop() async {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        if await process.exited(within: TestBudget.seconds(30)) { return }
        await kill9()
        Issue.record("\(process.arguments.prefix(3)) did not exit within 30 s of SIGTERM and was killed; its log: \(logPath)")
    }

    /// For a `defer`, which cannot wait: SIGKILL (a relay left running would hold its port and
    /// its database connections past the test).
    package func killWithoutWaiting() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

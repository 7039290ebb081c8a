import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Starting `campaign-relay serve` (possibly under `fiu-run`) and waiting for its address, telling
/// apart the three ways a start can go wrong under injected faults: a documented refusal (exit 1,
/// e.g. an injected `open` failure on the lock file: started again), a crash (a signal: a failure
/// of the test), and libfiu's rare start-up deadlock (nothing printed: killed and started again,
/// once).
package enum FaultyServe {
    /// What starting took.
    package struct Start {
        package var child: ChildProcess
        package var port: Int
        /// Starts that ended in exit 1 under injected faults before this one.
        package var refusedStarts: Int
        /// Starts that hung silently (libfiu's start-up deadlock) before this one.
        package var hungStarts: Int
        /// What the refused starts printed (their injected errors count as hits too).
        package var refusedOutput: String
    }

    /// Each refused start is an honest outcome (an injected failure while opening the log or the
    /// aggregates database), so the attempts are many: at the central relay test's 6 % rates, 11
    /// local runs refused up to 6 starts in a row and one CI run refused all of its 8 attempts. A
    /// refused start costs some 100 ms, so 40 cost little and leave a refusal streak no chance.
    package static func start(_ executable: String, _ arguments: [String], attempts: Int = 40) async throws -> Start {
        try await start(executable, attempts: attempts) { _ in arguments }
    }

    /// ``start(_:_:attempts:)`` with the arguments of each attempt (0, 1, …) from `arguments`: a
    /// run under libfiu seeds its draws (`FIU_PRNG_SEED`), and an attempt after a refused start
    /// needs other draws than the one refused.
    package static func start(_ executable: String, attempts: Int = 40, arguments: (_ attempt: Int) -> [String]) async throws -> Start {
        var refused = 0
        var hung = 0
        var refusedOutput = ""
        for attempt in 0..<attempts {
            let child = try ChildProcess(executable, arguments(attempt))
            // libfiu's start-up deadlock is silent: 60 s without a line is a hang (retried once).
            // A start that prints is under way, only slow on a loaded machine (in a CI run beside
            // a CPU burner serve printed its first line after 20 s): it gets 240 s, a hang guard.
            let began = Date()
            var silent = true
            while child.process.isRunning, Date() < began.addingTimeInterval(silent ? 60 : 240) {
                silent = silent && child.text.isEmpty
                if let match = child.text.firstMatch(of: /address=127\.0\.0\.1:(\d+)/), let port = Int(match.output.1) {
                    return Start(child: child, port: port, refusedStarts: refused, hungStarts: hung, refusedOutput: refusedOutput)
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            if child.process.isRunning {
                kill(child.process.processIdentifier, SIGKILL)
                await child.process.exited()
                try #require(
                    silent && hung == 0,
                    "\(silent ? "serve hung silently at start twice" : "serve printed but did not listen within 240 s"): \(child.text.suffix(2000))")
                hung += 1
                continue
            }
            await child.process.exited()
            try #require(
                child.process.terminationReason == .exit && child.process.terminationStatus == 1,
                "serve died while starting (\(child.process.terminationReason == .exit ? "exit" : "signal") \(child.process.terminationStatus)): \(child.text.suffix(2000))"
            )
            refused += 1
            refusedOutput += child.text
        }
        Issue.record("serve did not start in \(attempts) attempts; the last printed: \(refusedOutput.suffix(2000))")
        throw ChildProcess.Timeout()
    }

    /// Kills `child` if it still runs: for a test that ends early, so that no relay outlives it.
    package static func killIfRunning(_ child: ChildProcess) {
        if child.process.isRunning { kill(child.process.processIdentifier, SIGKILL) }
    }

    /// Stops `child` with SIGTERM and returns how it ended (a crash or hang fails the test).
    package static func stop(_ child: ChildProcess, label: String) async -> BoundedRun.Ending {
        if child.process.isRunning { kill(child.process.processIdentifier, SIGTERM) }
        let exited = await child.exit(within: 30)
        #expect(exited, "\(label): serve did not stop within 30 s of SIGTERM")
        guard exited else { return .timedOut }
        return child.process.terminationReason == .exit ? .exited(child.process.terminationStatus) : .signalled(child.process.terminationStatus)
    }
}

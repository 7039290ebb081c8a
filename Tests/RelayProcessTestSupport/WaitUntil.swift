import Foundation
import RelayTestSupport
import Testing

/// Waits until `condition` holds, checking every 20 ms, for at most `seconds` (less when the
/// test's time limit runs out first: ``TestBudget``); records what was awaited when the time runs out.
package func waitUntil(_ what: String, seconds: Double = 30, _ condition: () async throws -> Bool) async throws {
    _ = try await poll(what, seconds: seconds, condition)
}

/// ``waitUntil(_:seconds:_:)`` that throws ``WaitedTooLong`` when the time runs out, so the test
/// stops at what it was waiting for instead of failing every step after it (60 s by default).
package func eventually(_ what: String, seconds: Double = 60, _ condition: () async throws -> Bool) async throws {
    guard try await poll(what, seconds: seconds, condition) else { throw WaitedTooLong(what: what) }
}

/// Checks `condition` every 20 ms for at most `seconds` (cut by ``TestBudget``), and at least
/// once; records what was awaited and returns false when the time runs out.
private func poll(_ what: String, seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
    let granted = TestBudget.seconds(seconds)
    let deadline = Date().addingTimeInterval(granted)
    repeat {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    } while Date() < deadline
    Issue.record("waited \(granted) s for \(what)\(TestBudget.note(requested: seconds, granted: granted))")
    return false
}

/// What ``eventually(_:seconds:_:)`` waited for in vain.
package struct WaitedTooLong: Error {
    package var what: String

    package init(what: String) { self.what = what }
}

/// Checks `condition` every 20 ms until it says done, for as long as its progress moves: records
/// what was awaited and returns false only when the progress stood still for `stalled` seconds (or
/// the test's time limit ran out, ``TestBudget``).
///
/// For a drain whose speed is the machine's: a backlog forwarded at background priority beside a
/// CPU burner and a whole tier of suites can take minutes, and a fixed deadline would fail a drain
/// that is getting there; one that stops moving is what is wrong.
package func waitWhileProgressing(
    _ what: String, stalled seconds: Double = 60, _ condition: () async throws -> (done: Bool, progress: Int)
) async throws -> Bool {
    let budget = TestBudget.seconds(3_600)
    let deadline = Date().addingTimeInterval(budget)
    var last: Int?
    var movedAt = Date()
    while true {
        let (done, progress) = try await condition()
        if done { return true }
        if progress != last { (last, movedAt) = (progress, Date()) }
        if Date().timeIntervalSince(movedAt) >= seconds || Date() >= deadline { break }
        try await Task.sleep(for: .milliseconds(20))
    }
    let why = Date() >= deadline ? "the test's time limit ran out" : "no progress for \(seconds) s"
    Issue.record("gave up waiting for \(what): \(why) (progress stood at \(last.map(String.init) ?? "nothing"))")
    return false
}

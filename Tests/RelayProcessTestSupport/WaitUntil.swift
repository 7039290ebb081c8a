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

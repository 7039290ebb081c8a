import Foundation
import Testing

/// Waits until `condition` holds, checking every 20 ms, for at most `seconds`; records what was
/// awaited when the time runs out.
package func waitUntil(_ what: String, seconds: Double = 30, _ condition: () async throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    Issue.record("gave up after \(seconds) s waiting for: \(what)")
}

/// ``waitUntil(_:seconds:_:)`` that throws ``WaitedTooLong`` when the time runs out, so the test
/// stops at what it was waiting for instead of failing every step after it (60 s by default).
package func eventually(_ what: String, seconds: Double = 60, _ condition: () async throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    Issue.record("waited \(seconds) s for \(what)")
    throw WaitedTooLong(what: what)
}

/// What ``eventually(_:seconds:_:)`` waited for in vain.
package struct WaitedTooLong: Error {
    package var what: String

    package init(what: String) { self.what = what }
}

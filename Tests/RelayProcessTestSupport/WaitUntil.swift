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

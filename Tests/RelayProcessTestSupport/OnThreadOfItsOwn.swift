import Foundation

/// Runs `body` on a new thread of its own and returns what it returns: for test code that blocks
/// (polls with `usleep`, waits for a process, reads a pipe), so the cooperative pool stays free
/// for the in-process servers other tests talk to (``CooperativePool``).
package func onThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

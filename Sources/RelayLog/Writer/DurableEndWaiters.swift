/// The callers of ``WriteAheadLog/waitForDurable(beyond:)`` waiting for the durable end to pass
/// a sequence number. Owned by the log's actor; resumed by commits, cancellation and `close()`.
struct DurableEndWaiters: Sendable {
    private var waiters: [Int: (beyond: UInt64, continuation: CheckedContinuation<UInt64, Never>)] = [:]
    private var nextID = 0

    /// An identifier for the next waiter, taken before it waits (so cancellation can find it).
    mutating func reserveID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    /// `continuation` waits, under `id`, for the durable end to pass `sequence`.
    mutating func add(_ id: Int, beyond sequence: UInt64, _ continuation: CheckedContinuation<UInt64, Never>) {
        waiters[id] = (sequence, continuation)
    }

    /// Resumes waiter `id` (cancelled) with `durableEnd`, if it still waits.
    mutating func cancel(_ id: Int, durableEnd: UInt64) {
        waiters.removeValue(forKey: id)?.continuation.resume(returning: durableEnd)
    }

    /// Resumes those the durable end passed (`all`: every one, the log is closing) with it.
    mutating func wake(durableEnd: UInt64, all: Bool = false) {
        for (id, waiter) in waiters where all || durableEnd > waiter.beyond {
            waiters[id] = nil
            waiter.continuation.resume(returning: durableEnd)
        }
    }
}

import NIOConcurrencyHelpers

/// Turns taken one at a time, in the order asked: what an actor uses when one of its steps spans
/// `await`s (a catch-up of the log, an erasure, a batch appended) and must not interleave with
/// another, since the actor lets other calls in at each `await`.
///
/// A turn ended hands itself to the first waiting, so that a caller that keeps asking cannot
/// overtake those already waiting. Waiting is not cancellable: a turn is held for one bounded step.
public final class TurnQueue: Sendable {
    private struct State {
        var taken = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = NIOLockedValueBox(State())

    /// A queue whose turn nobody holds.
    public init() {}

    /// Waits for the turns asked for before, then holds the turn until ``end()``.
    public func take() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLockedValue { state in
                guard state.taken else {
                    state.taken = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// How many callers wait for the turn now.
    public var waiting: Int { state.withLockedValue { $0.waiting.count } }

    /// Ends the turn ``take()`` gave: the first waiting holds it next.
    public func end() {
        let next = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.taken = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

import NIOConcurrencyHelpers

/// A gate requests wait at while it is closed: a test holds a request on the wire (its head and
/// body arrived, no answer sent) for exactly as long as it needs, and knows when one is held.
public final class EmulatorGate: Sendable {
    private struct State {
        var closed = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = NIOLockedValueBox(State())

    /// An open gate.
    public init() {}

    /// Requests arriving from now on wait until ``open()``.
    public func close() {
        state.withLockedValue { $0.closed = true }
    }

    /// Lets the requests waiting go on, and the later ones through.
    public func open() {
        let waiting = state.withLockedValue { state in
            state.closed = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for request in waiting { request.resume() }
    }

    /// How many requests wait at the gate now.
    public var held: Int { state.withLockedValue { $0.waiting.count } }

    /// Returns at once while the gate is open; otherwise when it opens.
    func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let passes = state.withLockedValue { state in
                guard state.closed else { return true }
                state.waiting.append(continuation)
                return false
            }
            if passes { continuation.resume() }
        }
    }
}

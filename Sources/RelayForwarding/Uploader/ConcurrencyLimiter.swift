import NIOConcurrencyHelpers

/// The requests in flight to one lane's host, held under a limit: the driver of
/// ``AdaptiveConcurrency`` (`--concurrency` its ceiling), or a fixed limit of `--concurrency`
/// without `--adaptive-concurrency` (the default).
///
/// Every request to the host takes a permit first and gives it back with how it ended: the lane's
/// single sends wait for one (``acquire()``), and the tracking pipeline's connections are handed
/// one each (``acquire(_:)``), so both draw on the one limit. A lock, not an actor: the pipeline
/// takes and returns permits on its event loop, once per hit.
public final class ConcurrencyLimiter: Sendable {
    /// A request under way: when it started, for its round trip.
    public struct Permit: Sendable {
        let started: ContinuousClock.Instant
    }

    /// What the limit is now, for metrics and the status page.
    public struct Snapshot: Sendable, Hashable {
        /// Requests in flight allowed now.
        public var limit: Int
        /// The most allowed (`--concurrency`).
        public var ceiling: Int
        /// Requests in flight now.
        public var inFlight: Int
        /// Whether the limit adapts to the host's answers.
        public var adaptive: Bool
        /// The host's round trip when it queues nothing of the lane's (adaptive only).
        public var baseline: Duration?
        /// The mean round trip of the last window with answers (adaptive only).
        public var roundTrip: Duration?
    }

    private struct State {
        var machine: AdaptiveConcurrency?
        var fixedLimit: Int
        var inFlight = 0
        var waiting: [@Sendable (Permit) -> Void] = []

        var limit: Int { machine?.limit ?? fixedLimit }
    }

    private let state: NIOLockedValueBox<State>
    /// Called with each change a window ends with (outside the lock).
    private let onChange: @Sendable (AdaptiveConcurrency.Change, Snapshot) -> Void

    /// A limiter of at most `ceiling` requests, adapting to the host's answers when `adaptive`;
    /// `onChange` hears of every window's decision.
    public init(ceiling: Int, adaptive: Bool, onChange: @escaping @Sendable (AdaptiveConcurrency.Change, Snapshot) -> Void = { _, _ in }) {
        let ceiling = max(1, ceiling)
        state = NIOLockedValueBox(State(machine: adaptive ? AdaptiveConcurrency(settings: .init(ceiling: ceiling)) : nil, fixedLimit: ceiling))
        self.onChange = onChange
    }

    /// The limit now.
    public var snapshot: Snapshot {
        state.withLockedValue { Self.snapshot(of: $0) }
    }

    private static func snapshot(of state: State) -> Snapshot {
        Snapshot(
            limit: state.limit, ceiling: state.machine?.settings.ceiling ?? state.fixedLimit, inFlight: state.inFlight,
            adaptive: state.machine != nil,
            baseline: state.machine?.baseline, roundTrip: state.machine?.roundTrip)
    }

    /// Waits for a permit. Cancellation does not end the wait early: a permit granted to a
    /// cancelled task is used or given back by its caller.
    public func acquire() async -> Permit {
        await withCheckedContinuation { (continuation: CheckedContinuation<Permit, Never>) in
            acquire { continuation.resume(returning: $0) }
        }
    }

    /// Calls `granted` with a permit, at once when the limit has room (on the calling thread),
    /// otherwise when a request ends (on the thread that ended it).
    public func acquire(_ granted: @escaping @Sendable (Permit) -> Void) {
        let now = ContinuousClock.now
        let permit: Permit? = state.withLockedValue { state in
            guard state.inFlight < state.limit else {
                state.waiting.append(granted)
                return nil
            }
            return Self.take(&state, now: now)
        }
        if let permit { granted(permit) }
    }

    /// A permit now if the limit has room, else `nil` (nothing waits).
    public func tryAcquire() -> Permit? {
        let now = ContinuousClock.now
        return state.withLockedValue { state in
            state.inFlight < state.limit ? Self.take(&state, now: now) : nil
        }
    }

    private static func take(_ state: inout State, now: ContinuousClock.Instant) -> Permit {
        state.inFlight += 1
        state.machine?.started(inFlight: state.inFlight, now: now)
        return Permit(started: now)
    }

    /// Gives `permit` back: its request ended with `signal`. Waiting requests get the room there is.
    public func release(_ permit: Permit, _ signal: AdaptiveConcurrency.Signal) {
        let now = ContinuousClock.now
        let (closed, granted) = state.withLockedValue {
            state -> ((AdaptiveConcurrency.Change, Snapshot)?, [(@Sendable (Permit) -> Void, Permit)]) in
            state.inFlight -= 1
            let change = state.machine?.ended(signal, roundTrip: now - permit.started, now: now)
            var granted: [(@Sendable (Permit) -> Void, Permit)] = []
            while state.inFlight < state.limit, !state.waiting.isEmpty {
                granted.append((state.waiting.removeFirst(), Self.take(&state, now: now)))
            }
            // A snapshot only when a window closed: most answers close none.
            return (change.map { ($0, Self.snapshot(of: state)) }, granted)
        }
        if let (change, snapshot) = closed { onChange(change, snapshot) }
        for (waiter, permit) in granted { waiter(permit) }
    }

    /// How an attempt's outcome counts for the limit: 429, 502, 503, 504 and failures without an
    /// answer (a timeout, a connection refused or reset) are overload; any other answer is a
    /// round trip of the host's; a request never sent says nothing.
    public static func signal(of outcome: DeliveryOutcome) -> AdaptiveConcurrency.Signal {
        switch outcome {
        case .delivered, .rejected, .redirected: .answered
        case .retryable(_, _, let status?, _): overloadStatuses.contains(status) ? .overloaded : .answered
        case .retryable(_, _, nil, _): .overloaded
        case .notSent: .ignored
        }
    }

    /// The statuses that say the host is overloaded.
    public static let overloadStatuses: Set<Int> = [429, 502, 503, 504]
}

import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix
import RelayCore

/// The requests in flight to one lane's host, held under a limit: the driver of
/// ``AdaptiveConcurrency`` (`--concurrency` its ceiling; the default), or a fixed limit of
/// `--concurrency` (`--no-adaptive-concurrency`); and of ``RateCeiling`` with `max-rate`.
///
/// Every request to the host takes a permit first and gives it back with how it ended: the lane's
/// single sends wait for one (``acquire()``), and the tracking pipeline's connections are handed
/// one each (``acquire(_:)``), so both draw on the one limit. A lock, not an actor: the pipeline
/// takes and returns permits on its event loop, once per hit.
///
/// A request the rate ceiling holds back waits in the queue like one the limit holds back; a
/// timer on ``timerLoop`` grants it when the ceiling lets it start.
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
        /// Requests a second at most (`max-rate`); `nil`: no ceiling.
        public var maximumRate: Int?
        /// Whether the rate ceiling held a request back within the last second: the drain is paced.
        public var paced: Bool
    }

    private struct State {
        var machine: AdaptiveConcurrency?
        var fixedLimit: Int
        var ceiling: RateCeiling?
        var inFlight = 0
        var waiting: [Waiter] = []
        /// How many times the ceiling has held a request back: a waiter granted after this moved
        /// past its value at its arrival waited for the ceiling.
        var ceilingHolds = 0
        /// When the timer granting requests the ceiling held back fires (wall clock); `nil`: none armed.
        var timerAt: Double?
        /// When the ceiling last held a request back (wall clock).
        var heldBackAt: Double?

        var limit: Int { machine?.limit ?? fixedLimit }
    }

    /// A request waiting for a permit.
    private struct Waiter {
        var granted: @Sendable (Permit) -> Void
        /// ``State/ceilingHolds`` when it arrived.
        var holdsAtArrival: Int
    }

    /// Permits taken for waiters, and how many of those had waited for the rate ceiling.
    private struct Grants {
        var permits: [(@Sendable (Permit) -> Void, Permit)] = []
        var paced = 0
    }

    private let state: NIOLockedValueBox<State>
    /// Called with each change a window ends with (outside the lock).
    private let onChange: @Sendable (AdaptiveConcurrency.Change, Snapshot) -> Void
    /// Called with the number of requests that start after waiting for the rate ceiling (outside the lock).
    private let onPaced: @Sendable (Int) -> Void
    /// Where the rate ceiling's timer runs.
    private let timerLoop: any EventLoop
    /// The wall clock, seconds since the Unix epoch (the rate ceiling counts its seconds).
    private let wallClock: @Sendable () -> Double

    /// A limiter of at most `ceiling` requests, adapting to the host's answers when `adaptive`,
    /// starting at most `maximumRate` a second when given; `onChange` hears of every window's decision.
    public init(
        ceiling: Int, adaptive: Bool, maximumRate: Int? = nil, timerLoop: (any EventLoop)? = nil,
        wallClock: (@Sendable () -> Double)? = nil, onPaced: @escaping @Sendable (Int) -> Void = { _ in },
        onChange: @escaping @Sendable (AdaptiveConcurrency.Change, Snapshot) -> Void = { _, _ in }
    ) {
        let ceiling = max(1, ceiling)
        state = NIOLockedValueBox(
            State(
                machine: adaptive ? AdaptiveConcurrency(settings: .init(ceiling: ceiling)) : nil, fixedLimit: ceiling,
                ceiling: maximumRate.map { RateCeiling(rate: $0) }))
        self.onChange = onChange
        self.onPaced = onPaced
        self.timerLoop = timerLoop ?? MultiThreadedEventLoopGroup.singleton.next()
        self.wallClock = wallClock ?? { SystemClock.wallSeconds() }
    }

    /// The limit now.
    public var snapshot: Snapshot {
        let now = wallClock()
        return state.withLockedValue { Self.snapshot(of: $0, now: now) }
    }

    private static func snapshot(of state: State, now: Double) -> Snapshot {
        Snapshot(
            limit: state.limit, ceiling: state.machine?.settings.ceiling ?? state.fixedLimit, inFlight: state.inFlight,
            adaptive: state.machine != nil,
            baseline: state.machine?.baseline, roundTrip: state.machine?.roundTrip, maximumRate: state.ceiling?.rate,
            paced: state.heldBackAt.map { now - $0 < 1 } ?? false)
    }

    /// Waits for a permit. Cancellation does not end the wait early: a permit granted to a
    /// cancelled task is used or given back by its caller.
    public func acquire() async -> Permit {
        await withCheckedContinuation { (continuation: CheckedContinuation<Permit, Never>) in
            acquire { continuation.resume(returning: $0) }
        }
    }

    /// Calls `granted` with a permit, at once when the limit and the rate ceiling let a request
    /// start (on the calling thread), otherwise when a request ends or the ceiling's timer fires
    /// (on that thread).
    public func acquire(_ granted: @escaping @Sendable (Permit) -> Void) {
        let now = ContinuousClock.now
        let wall = wallClock()
        let (permit, timer): (Permit?, Double?) = state.withLockedValue { state in
            let waiter = Waiter(granted: granted, holdsAtArrival: state.ceilingHolds)
            if state.waiting.isEmpty, state.inFlight < state.limit {
                switch Self.rateDecision(&state, wall: wall) {
                case .start: return (Self.take(&state, now: now), nil)
                case .wait(let until):
                    state.waiting.append(waiter)
                    return (nil, Self.armTimer(&state, at: until))
                }
            }
            state.waiting.append(waiter)
            return (nil, nil)
        }
        if let permit { granted(permit) }
        if let timer { schedule(at: timer, wall: wall) }
    }

    /// A permit now if the limit has room, nothing waits before it and the rate ceiling lets a
    /// request start, else `nil` (nothing waits).
    public func tryAcquire() -> Permit? {
        let now = ContinuousClock.now
        let wall = wallClock()
        return state.withLockedValue { state in
            guard state.waiting.isEmpty, state.inFlight < state.limit else { return nil }
            guard case .start = Self.rateDecision(&state, wall: wall) else { return nil }
            return Self.take(&state, now: now)
        }
    }

    private static func take(_ state: inout State, now: ContinuousClock.Instant) -> Permit {
        state.inFlight += 1
        state.machine?.started(inFlight: state.inFlight, now: now)
        return Permit(started: now)
    }

    /// What the rate ceiling says of a request starting now (`.start` without one), noting when it held one back.
    private static func rateDecision(_ state: inout State, wall: Double) -> RateCeiling.Decision {
        guard var ceiling = state.ceiling else { return .start }
        let decision = ceiling.request(now: wall)
        state.ceiling = ceiling
        if case .wait = decision {
            state.heldBackAt = wall
            state.ceilingHolds += 1
        }
        return decision
    }

    /// Arms the timer for `until` unless one fires sooner; returns the time to schedule, if new.
    private static func armTimer(_ state: inout State, at until: Double) -> Double? {
        if let armed = state.timerAt, armed <= until { return nil }
        state.timerAt = until
        return until
    }

    private func schedule(at until: Double, wall: Double) {
        let delay = TimeAmount.nanoseconds(Int64(max(0, until - wall) * 1e9))
        timerLoop.scheduleTask(in: delay) { self.timerFired(at: until) }
    }

    /// The rate ceiling's timer: the requests waiting get what the limit and the ceiling allow now.
    private func timerFired(at armed: Double) {
        let now = ContinuousClock.now
        let wall = wallClock()
        let (grants, timer) = state.withLockedValue { state -> (Grants, Double?) in
            // A timer armed for a later time was replaced by this one's; only the latest counts.
            guard state.timerAt == armed else { return (Grants(), nil) }
            state.timerAt = nil
            return Self.grantWaiting(&state, now: now, wall: wall)
        }
        if let timer { schedule(at: timer, wall: wall) }
        hand(grants)
    }

    /// Takes permits for the requests waiting while the limit and the rate ceiling let them start;
    /// with some still held back by the ceiling, the time its timer is to fire (when newly armed).
    private static func grantWaiting(_ state: inout State, now: ContinuousClock.Instant, wall: Double) -> (Grants, Double?) {
        var grants = Grants()
        while state.inFlight < state.limit, !state.waiting.isEmpty {
            if case .wait(let until) = rateDecision(&state, wall: wall) {
                return (grants, armTimer(&state, at: until))
            }
            let waiter = state.waiting.removeFirst()
            if state.ceilingHolds > waiter.holdsAtArrival { grants.paced += 1 }
            grants.permits.append((waiter.granted, take(&state, now: now)))
        }
        return (grants, nil)
    }

    /// Hands the permits taken to their waiters (outside the lock).
    private func hand(_ grants: Grants) {
        if grants.paced > 0 { onPaced(grants.paced) }
        for (waiter, permit) in grants.permits { waiter(permit) }
    }

    /// Gives `permit` back: its request ended with `signal`. Waiting requests get the room there is.
    public func release(_ permit: Permit, _ signal: AdaptiveConcurrency.Signal) {
        let now = ContinuousClock.now
        let wall = wallClock()
        let (closed, grants, timer) = state.withLockedValue { state -> ((AdaptiveConcurrency.Change, Snapshot)?, Grants, Double?) in
            state.inFlight -= 1
            let change = state.machine?.ended(signal, roundTrip: now - permit.started, now: now)
            let (grants, timer) = Self.grantWaiting(&state, now: now, wall: wall)
            // A snapshot only when a window closed: most answers close none.
            return (change.map { ($0, Self.snapshot(of: state, now: wall)) }, grants, timer)
        }
        if let (change, snapshot) = closed { onChange(change, snapshot) }
        if let timer { schedule(at: timer, wall: wall) }
        hand(grants)
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

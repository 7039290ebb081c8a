/// When a host keeps failing, stop sending to it for a while, then let one probe through.
///
/// A pure state machine (no clock, no tasks): callers pass the time in and act on what it returns.
/// - closed: requests go through; `threshold` retryable failures in a row open it;
/// - open until a time: nothing goes through; the time comes from `Retry-After` when the host sent
///   one, else from full-jitter backoff on the number of times the breaker opened in a row;
/// - half-open: one probe goes through; success closes the breaker, failure opens it again.
///
/// An outage therefore costs one request per open interval instead of one per waiting event.
public struct CircuitBreakerStateMachine: Sendable {
    /// The breaker's state.
    public enum State: Sendable, Hashable {
        case closed(consecutiveFailures: Int)
        case open(until: ContinuousClock.Instant, trips: Int)
        case halfOpen(probeInFlight: Bool, trips: Int)
    }

    /// What a caller that wants to send must do.
    public enum Permission: Sendable, Hashable {
        /// Send now.
        case proceed
        /// Send nothing before this time, then ask again.
        case waitUntil(ContinuousClock.Instant)
        /// A probe is under way; ask again shortly.
        case waitForProbe
    }

    /// The current state.
    public private(set) var state: State = .closed(consecutiveFailures: 0)
    /// Retryable failures in a row that open the breaker.
    public let threshold: Int
    let backoff: Backoff
    /// When the breaker last opened after being closed (the start of the current outage).
    public private(set) var failingSince: ContinuousClock.Instant?

    /// A closed breaker.
    public init(threshold: Int = 5, backoff: Backoff) {
        self.threshold = max(1, threshold)
        self.backoff = backoff
    }

    /// Whether a request may be sent now.
    public mutating func permission(now: ContinuousClock.Instant) -> Permission {
        switch state {
        case .closed:
            return .proceed
        case .open(let until, let trips):
            guard now >= until else { return .waitUntil(until) }
            state = .halfOpen(probeInFlight: true, trips: trips)
            return .proceed
        case .halfOpen(let probeInFlight, let trips):
            if probeInFlight { return .waitForProbe }
            state = .halfOpen(probeInFlight: true, trips: trips)
            return .proceed
        }
    }

    /// The request granted as the half-open probe was not sent after all (its event was erased
    /// meanwhile): the next request is the probe, rather than every one waiting for an answer that
    /// never comes.
    public mutating func probeNotSent() {
        if case .halfOpen(true, let trips) = state { state = .halfOpen(probeInFlight: false, trips: trips) }
    }

    /// The host accepted or permanently rejected a request: it is up.
    public mutating func recordAnswer() {
        state = .closed(consecutiveFailures: 0)
        failingSince = nil
    }

    /// A retryable failure. Returns the time the breaker opened until, if it opened.
    @discardableResult
    public mutating func recordFailure(now: ContinuousClock.Instant, retryAfter: Duration?, using generator: inout some RandomNumberGenerator)
        -> ContinuousClock.Instant?
    {
        switch state {
        case .closed(let failures):
            // A host that says when to come back is believed at once.
            if failures + 1 >= threshold || retryAfter != nil {
                return open(now: now, trips: 0, retryAfter: retryAfter, using: &generator)
            }
            state = .closed(consecutiveFailures: failures + 1)
            return nil
        case .halfOpen(_, let trips), .open(_, let trips):
            return open(now: now, trips: trips + 1, retryAfter: retryAfter, using: &generator)
        }
    }

    private mutating func open(now: ContinuousClock.Instant, trips: Int, retryAfter: Duration?, using generator: inout some RandomNumberGenerator)
        -> ContinuousClock.Instant
    {
        if failingSince == nil { failingSince = now }
        // At least a tenth of the ceiling, so a probe never follows the previous failure at once.
        let jitter = backoff.delay(attempt: trips, using: &generator)
        let delay = retryAfter ?? max(jitter, backoff.ceiling(attempt: trips) / 10)
        let until = now + delay
        state = .open(until: until, trips: trips)
        return until
    }
}

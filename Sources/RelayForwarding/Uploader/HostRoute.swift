import CampaignProtocol

/// One host of an event sink's destination, as its lane sends to it: the first host or a spare,
/// each with a circuit breaker, a limit of requests in flight (and rate ceiling) and, for tracking
/// hits, a pipeline of its own. A host that fails is only probed while the others carry its share.
struct HostRoute: Sendable {
    /// Where it sends.
    let host: CampaignHost
    /// Whether the host is failing; owned by the lane (an actor), which mutates it.
    var breaker: CircuitBreakerStateMachine
    /// Its requests in flight and the rate they start at.
    let concurrency: ConcurrencyLimiter
    /// Healthy-host batches of tracking hits, to this host.
    let pipeline: TrackingHitPipeline?
}

/// What the status page and `/v1/status` show of one host of a destination.
public struct HostState: Sendable, Hashable {
    /// The host's URL.
    public var url: String
    /// `closed` (sending), `open` (waiting to probe) or `half-open` (probing).
    public var breaker: String
    /// Its requests in flight and their limit.
    public var concurrency: ConcurrencyLimiter.Snapshot
}

extension CircuitBreakerStateMachine {
    /// Whether requests go through (neither open nor probing).
    var isClosed: Bool {
        if case .closed = state { true } else { false }
    }

    /// `closed`, `open` or `half-open`, as the status shows it.
    var stateName: String {
        switch state {
        case .closed: "closed"
        case .open: "open"
        case .halfOpen: "half-open"
        }
    }
}

import RelayCore

/// Full-jitter exponential backoff: the n-th retry waits a random time between 0 and
/// `min(cap, base × 2^n)`, so clients that failed together do not retry together.
public struct Backoff: Sendable, Hashable {
    /// The ceiling of the first retry's delay.
    public var base: Duration
    /// The largest ceiling.
    public var cap: Duration

    /// A backoff from `base` doubling up to `cap`.
    public init(base: Duration = .milliseconds(100), cap: Duration = .seconds(60)) {
        self.base = base
        self.cap = max(cap, base)
    }

    /// The ceiling of retry number `attempt` (0 for the first retry).
    public func ceiling(attempt: Int) -> Duration {
        let factor = Int64(1) << Int64(min(attempt, 40))
        let (product, overflow) = base.components.seconds.multipliedReportingOverflow(by: factor)
        if overflow || product > cap.components.seconds { return cap }
        return min(cap, base * Int(factor))
    }

    /// A random delay for retry number `attempt`, uniform between 0 and its ceiling.
    public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let ceiling = ceiling(attempt: attempt)
        let nanoseconds = ceiling.nanoseconds
        guard nanoseconds > 0 else { return .zero }
        return .nanoseconds(Int64.random(in: 0...nanoseconds, using: &generator))
    }
}

/// The most requests a lane starts to one host in a second (`max-rate`), decided without I/O: the
/// rate ceiling's state machine, apart from the ``ConcurrencyLimiter`` that follows it.
///
/// A token bucket, with two rules that make "at most N in any one second" hold at the host too:
/// - the bucket fills at N / 0.9 tokens a second and holds at most N / 50 (a burst of 20 ms), so a
///   backlog goes out evenly rather than all at once at the start of each second;
/// - within one second of the wall clock at most N requests start, and none in its last 100 ms
///   (``quietTail``): a request started late in a second would otherwise reach a host whose clock
///   agrees in the next second, beside that second's own N.
///
/// At a backlog the lane therefore starts exactly N requests a second, spread over the first
/// 900 ms of each. A request waiting for a token waits in the lane, and the backlog in the log.
public struct RateCeiling: Sendable, Hashable {
    /// The end of each second in which no request starts.
    public static let quietTail = 0.1

    /// Requests a second, at most.
    public let rate: Int
    private var tokens: Double
    private var refilledAt: Double?
    private var second: Int64 = .min
    private var startedInSecond = 0

    /// What the ceiling says of a request that would start now.
    public enum Decision: Sendable, Hashable {
        /// It may start (its token is taken).
        case start
        /// Not before this wall-clock time (seconds since the Unix epoch).
        case wait(until: Double)
    }

    /// A ceiling of `rate` requests a second (at least one).
    public init(rate: Int) {
        self.rate = max(1, rate)
        self.tokens = Self.burst(of: self.rate)
    }

    private static func burst(of rate: Int) -> Double { max(1, Double(rate) / 50) }

    private var fillRate: Double { Double(rate) / (1 - Self.quietTail) }

    /// Whether a request may start at `now` (wall-clock seconds since the Unix epoch), taking its
    /// token when it may.
    public mutating func request(now: Double) -> Decision {
        if let refilledAt, now > refilledAt {
            tokens = min(Self.burst(of: rate), tokens + (now - refilledAt) * fillRate)
        }
        refilledAt = max(refilledAt ?? now, now)
        let current = Int64(now.rounded(.down))
        if current != second {
            second = current
            startedInSecond = 0
        }
        let next = Double(current + 1)
        if startedInSecond >= rate || now - Double(current) >= 1 - Self.quietTail { return .wait(until: next) }
        // A token due at exactly `now` may be a rounding short of one.
        guard tokens >= 1 - 1e-9 else { return .wait(until: min(next, now + (1 - tokens) / fillRate)) }
        tokens -= 1
        startedInSecond += 1
        return .start
    }
}

/// How the uploader sends: concurrency, timeouts, backoff, breaker, and the duplicate bound.
public struct UploadConfiguration: Sendable, Hashable {
    /// Requests in flight at once to the tracking host.
    public var concurrency: Int
    /// How long one request may take.
    public var requestTimeout: Duration
    /// Retry delays.
    public var backoff: Backoff
    /// Retryable failures in a row that make the uploader stop sending and probe instead.
    public var breakerThreshold: Int
    /// The most events sent beyond the durable cursor. After a crash at most this many events of a
    /// lane can be sent a second time: it is the duplicate bound.
    public var maximumUnsyncedEvents: Int
    /// At most this many events per second (replays); `nil` for no limit.
    public var maximumRate: Double?

    /// The defaults: 8 concurrent requests, 30 s timeout (as the SDKs), backoff 100 ms doubling to
    /// 60 s, breaker after 5 failures, at most 4,096 events beyond the durable cursor.
    public init(
        concurrency: Int = 8, requestTimeout: Duration = .seconds(30), backoff: Backoff = Backoff(), breakerThreshold: Int = 5,
        maximumUnsyncedEvents: Int = 4096, maximumRate: Double? = nil
    ) {
        self.concurrency = max(1, concurrency)
        self.requestTimeout = requestTimeout
        self.backoff = backoff
        self.breakerThreshold = breakerThreshold
        self.maximumUnsyncedEvents = max(self.concurrency, maximumUnsyncedEvents)
        self.maximumRate = maximumRate
    }
}

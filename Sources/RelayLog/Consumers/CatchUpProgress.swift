/// How far a consumer's catch-up (``LogCatchUp``: an aggregation run, a rebuild) has come, reported as it goes.
public struct CatchUpProgress: Sendable, Hashable {
    /// The next sequence number to consume.
    public var position: UInt64
    /// The durable end of the log when the run started (or last looked).
    public var end: UInt64
    /// Events consumed so far in this run.
    public var events: Int
    /// Seconds since the run started.
    public var seconds: Double

    /// Progress at `position` of a run to `end`.
    public init(position: UInt64, end: UInt64, events: Int, seconds: Double) {
        self.position = position
        self.end = end
        self.events = events
        self.seconds = seconds
    }
}

/// What a consumer's catch-up did.
public struct CatchUpSummary: Sendable, Hashable {
    /// Events consumed (counted, for an aggregator).
    public var events = 0
    /// Transactions committed.
    public var transactions = 0
    /// The position when the run started.
    public var startPosition: UInt64 = 0
    /// The position when it ended (every event below it is consumed).
    public var endPosition: UInt64 = 0
    /// Sequence numbers skipped because their frames are damaged.
    public var skippedSequences: UInt64 = 0
    /// Seconds the run took.
    public var seconds = 0.0

    /// A summary of a run from `startPosition` to `endPosition`, filled in as it goes.
    public init(startPosition: UInt64 = 0, endPosition: UInt64 = 0) {
        self.startPosition = startPosition
        self.endPosition = endPosition
    }

    /// Events consumed per second.
    public var eventsPerSecond: Double { seconds > 0 ? Double(events) / seconds : 0 }
}

public import RelayCore

/// What one upload lane has done.
public struct LaneStatistics: Sendable, Hashable {
    /// Events the host accepted (HTTP 200).
    public var delivered = 0
    /// Registrations skipped because they equal the last one delivered for their token.
    public var skippedDuplicates = 0
    /// Registrations not sent because they were erased after the lane read them.
    public var skippedErased = 0
    /// Events the host rejected permanently, now in the dead-letter store.
    public var deadLettered = 0
    /// Events a replay's host rejected (or the replay gave up on): reported, not stored, since the
    /// log's own upload keeps its dead letters.
    public var rejected = 0
    /// Retries after retryable failures.
    public var retries = 0
    /// Events of the log that are not for this lane (passed over).
    public var passedOver = 0
    /// Every event below this sequence number is done (delivered, dead-lettered or passed over).
    public var position: UInt64 = 1
    /// The end of the log the lane is working towards.
    public var end: UInt64 = 1
    /// The last retryable failure, if the host is failing now.
    public var lastFailure: String?
    /// The time of the oldest event the host is still owed (read, not done yet), if any.
    public var oldestUnsentEvent: EventTime?
    /// The last retryable failure and when it happened, kept after the host recovers.
    public var lastError: String?
    /// When ``lastError`` happened.
    public var lastErrorAt: EventTime?
    /// The circuit breaker: `closed` (sending), `open` (waiting to probe) or `half-open` (probing).
    public var breaker = "closed"

    /// Records a retryable failure now: ``lastFailure`` (cleared when the host answers again),
    /// ``lastError`` and ``lastErrorAt`` (kept).
    mutating func failed(_ reason: String, at time: EventTime = .now()) {
        lastFailure = reason
        (lastError, lastErrorAt) = (reason, time)
    }

    /// Events left to do.
    public var backlog: UInt64 { end > position ? end - position : 0 }
}

/// What is remembered of one `Idempotency-Key` of `POST /v1/events`: the request's digest, the
/// log position it appended from and the time it gave events without one; then the answer.
public struct IdempotencyRecord: Sendable, Hashable {
    /// FNV-1a of the request body.
    public var digest: UInt64
    /// The log's durable end when the request began to append.
    public var startSequence: UInt64
    /// The time given to the request's events that carry none (nanoseconds since the epoch).
    public var defaultTimeNanoseconds: Int64
    /// The answer's status, once answered; `nil` while pending.
    public var status: Int?
    /// The answer's body, once answered; `nil` while pending.
    public var body: String?

    /// A record.
    public init(digest: UInt64, startSequence: UInt64, defaultTimeNanoseconds: Int64, status: Int?, body: String?) {
        self.digest = digest
        self.startSequence = startSequence
        self.defaultTimeNanoseconds = defaultTimeNanoseconds
        self.status = status
        self.body = body
    }
}

/// Where `POST /v1/events` keeps its `Idempotency-Key`s when not in the data directory's SQLite
/// file: beside the log kept in PostgreSQL, under the relay's stream, so that a relay whose disk is
/// lost (started again under the same name) still answers a resent batch once.
///
/// Every call is durable when it returns, or throws (the request is then answered 503).
public protocol IdempotencyTable: Sendable {
    /// What is remembered of `key`, or `nil`.
    func record(of key: String) async throws -> IdempotencyRecord?
    /// Records that a request with `key` is about to append (replacing an older record of it).
    func recordPending(_ key: String, digest: UInt64, startSequence: UInt64, defaultTimeNanoseconds: Int64) async throws
    /// Records the answer given to the request with `key`.
    func recordCompleted(_ key: String, status: Int, body: String) async throws
    /// Forgets keys recorded more than `seconds` ago.
    func forget(olderThanSeconds seconds: Int64) async throws
}

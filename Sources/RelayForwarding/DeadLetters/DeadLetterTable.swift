/// Where a relay keeps its dead letters when not in `forwarding.sqlite`: a table shared by the
/// relays of one log database (the log in PostgreSQL), each letter under its stream, so that the
/// letters of a relay whose disk is lost are still there for another to show and re-queue.
///
/// It stores the values as ``ForwardingStore`` hands them over (sealed when the log is
/// encrypted); sealing, opening and showing stay the store's. Every call is durable when it
/// returns, and one call is one transaction.
public protocol DeadLetterTable: Sendable {
    /// The stream whose letters the reads, counts, deletes and reseals see.
    var stream: String { get }

    /// Stores `letter` under `stream` (`nil`: ``stream``; another for a stream this relay forwards
    /// for a relay that stopped).
    func insert(_ letter: StoredDeadLetter, stream: String?) async throws(DeadLetterTableError)

    /// The letters of ``stream`` of tenant `tenant` (stored name; `nil`: every tenant), oldest
    /// first; re-queued ones too when `includeRequeued`; at most `limit`.
    func letters(tenant: String?, includeRequeued: Bool, limit: Int?) async throws(DeadLetterTableError) -> [StoredDeadLetter]

    /// Marks letter `id` as re-queued at `at` (RFC 3339) as log sequence `sequence`; `false` when
    /// ``stream`` has no such letter.
    func markRequeued(id: Int64, at: String, sequence: UInt64) async throws(DeadLetterTableError) -> Bool

    /// Letters of ``stream`` not re-queued, by tenant (stored name); a tenant with none is absent.
    func pendingCountsByTenant() async throws(DeadLetterTableError) -> [String: Int]

    /// Deletes letters `ids` of ``stream``; returns how many there were.
    func delete(ids: [Int64]) async throws(DeadLetterTableError) -> Int

    /// Replaces the sealed values of the letters of ``stream`` given, all or none; returns how many
    /// were replaced.
    func replaceValues(_ values: [DeadLetterValues]) async throws(DeadLetterTableError) -> Int
}

/// A dead letter as a ``DeadLetterTable`` stores it: its values as stored (sealed when the log is
/// encrypted), its tenant by stored name (`''`: the default tenant).
public struct StoredDeadLetter: Sendable, Hashable {
    /// The letter's number (assigned by the table; ignored by ``DeadLetterTable/insert(_:stream:)``).
    public var id: Int64
    /// The event's log sequence number.
    public var sequence: UInt64
    /// The tenant's stored name (`''`: the default tenant).
    public var tenant: String
    /// The values the store seals.
    public var values: DeadLetterValues
    /// The HTTP status of the host's last answer (0: none).
    public var status: Int
    /// Why the relay gave up.
    public var reason: String
    /// When it was dead-lettered (RFC 3339).
    public var deadLetteredAt: String
    /// When it was re-queued (RFC 3339) and as which sequence, if it was.
    public var requeuedAt: String?
    /// The sequence it was re-queued as.
    public var requeuedSequence: UInt64?

    /// A stored letter.
    public init(
        id: Int64, sequence: UInt64, tenant: String, values: DeadLetterValues, status: Int, reason: String, deadLetteredAt: String,
        requeuedAt: String? = nil, requeuedSequence: UInt64? = nil
    ) {
        self.id = id
        self.sequence = sequence
        self.tenant = tenant
        self.values = values
        self.status = status
        self.reason = reason
        self.deadLetteredAt = deadLetteredAt
        self.requeuedAt = requeuedAt
        self.requeuedSequence = requeuedSequence
    }
}

/// The three values of a dead letter that hold personal data, as stored (sealed with the log's
/// key when it is encrypted): what `wal rekey` seals anew.
public struct DeadLetterValues: Sendable, Hashable {
    /// The letter they belong to (0 before it is stored).
    public var id: Int64
    /// The event, in the relay's JSON event format.
    public var eventJSON: String
    /// The URL it was sent to.
    public var url: String
    /// The start of the host's answer.
    public var responseBody: String

    /// The values of letter `id`.
    public init(id: Int64, eventJSON: String, url: String, responseBody: String) {
        self.id = id
        self.eventJSON = eventJSON
        self.url = url
        self.responseBody = responseBody
    }
}

/// Why a ``DeadLetterTable`` could not do what was asked.
public struct DeadLetterTableError: Error, Sendable, CustomStringConvertible {
    /// What was being done ("storing a dead letter of stream r1").
    public var operation: String
    /// What failed, as the database said it.
    public var reason: String

    /// An error of `operation`.
    public init(_ operation: String, reason: String) {
        self.operation = operation
        self.reason = reason
    }

    public var description: String { "\(operation): \(reason)" }
}

/// A store of the aggregates that the log is counted into exactly once: SQLite's
/// `AggregateStore` (RelayAggregator) and PostgreSQL's `FleetBackend` (RelayPostgres).
///
/// A backend is built from a ``MetricTable``: its columns and upserts come from the table, and
/// ``migrate()`` runs its one ordered list of named migrations (``migrationNames``), the last of
/// which add the columns of the table's metrics a database lacks. A database made by an earlier
/// relay keeps its counts through every migration.
package protocol AggregateBackend {
    /// What the backend throws.
    associatedtype Failure: Error

    /// The metrics it counts.
    var table: MetricTable { get }

    /// The names of its migrations, in the order they run: its schema's versions, then one per
    /// metric ``MetricTable/original`` lacks (`metric <column>`).
    var migrationNames: [String] { get }

    /// Runs, in order, every migration the database lacks, in one transaction.
    ///
    /// - Throws: `Failure` when the database cannot be migrated; nothing of the migration is
    ///   applied then.
    func migrate() async throws(Failure)

    /// Counts `deltas` (events that continue the log exactly at the stored position `start`) and
    /// moves the position to `end`, in one transaction: a crash at any point neither loses nor
    /// double-counts an event.
    ///
    /// - Throws: `Failure` (nothing of the batch is counted then), among them a position that is
    ///   not `start`.
    func apply(_ deltas: CountDeltas, from start: UInt64, to end: UInt64) async throws(Failure)

    /// Takes `registrations` out of the counts, in one transaction: each counted one lowers its
    /// app's value of every per-app total metric whose predicate it matches, each token row
    /// removed lowers the distinct tokens, and each is remembered so that it is never counted.
    /// Idempotent.
    ///
    /// - Throws: `Failure` (nothing changed then).
    func uncount(_ registrations: [ErasedRegistration]) async throws(Failure) -> UncountedRegistrations
}

/// A registration an erasure takes out of the counts: what its plan (`ErasurePlan.Target` of
/// RelayLog) knows of it.
public struct ErasedRegistration: Sendable, Hashable {
    /// Its sequence number in the log.
    public var sequence: UInt64
    /// What the metrics' predicates see of it (its app, time and origin).
    public var facts: RegistrationFacts
    /// The relay in between its origin and this one, in a chain of three or more.
    public var viaRelayID: String?
    /// SHA-256 of its push token, lower-case hex.
    public var tokenDigest: String
    /// Whether it is a copy of an earlier entry (a re-queued dead letter), never counted.
    public var isCopy: Bool

    /// A registration to take out.
    public init(sequence: UInt64, facts: RegistrationFacts, viaRelayID: String?, tokenDigest: String, isCopy: Bool) {
        self.sequence = sequence
        self.facts = facts
        self.viaRelayID = viaRelayID
        self.tokenDigest = tokenDigest
        self.isCopy = isCopy
    }

    /// The per-app total metrics of `table` it counted in (by index in ``MetricTable/appTotals``).
    public func totals(in table: MetricTable) -> [AggregateMetric] {
        table.appTotals.filter { metric in
            guard case .registrations(let predicate) = metric.counted else { return false }
            return predicate.isEvery || predicate.matches(facts)
        }
    }
}

/// What an uncount changed.
public struct UncountedRegistrations: Sendable, Hashable {
    /// Registrations taken out of the counts (they had been counted).
    public var uncounted = 0
    /// Registrations not counted yet, now recorded so that they never are.
    public var neverCounted = 0
    /// Token rows removed (each lowers its app's distinct tokens).
    public var tokensForgotten = 0

    /// Nothing changed.
    public init() {}
}

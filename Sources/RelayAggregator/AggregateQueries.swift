public import RelayAggregates
public import RelayCore
public import RelayIO
import RelaySQLite

/// Read-only access to the aggregates, for `campaign-relay stats` and the admin API. Safe to use
/// while an aggregator writes (SQLite WAL mode lets readers see the last committed state).
///
/// Its reads run on a thread of its own (a ``BlockingExecutor``), never on the cooperative pool.
public actor AggregateQueries: BlockingActor {
    /// The database file.
    public let path: String
    /// The thread every SQLite call runs on.
    public nonisolated let executor: BlockingExecutor
    private let connection: SQLiteConnection
    /// The database's schema version: 1 (written before relay chains, so without origins), 2 or 3
    /// (before tenants: every row is the default tenant's, with no `tenant` column) or the current one.
    private let schemaVersion: Int64
    /// The metrics it reads, each from its column, or as 0 from a database not yet migrated to it.
    private let table: MetricTable
    /// The columns of `deliveries` and `registrations` the database has.
    private let columns: Set<String>

    /// What `SELECT` reads for `metric`: its column, or 0 when the database has none yet.
    private func selected(_ metric: AggregateMetric) -> String { columns.contains(metric.column) ? metric.column : "0" }

    /// The `tenant` column, or the default tenant's `''` for a database from before tenants.
    private var tenantColumn: String { schemaVersion >= AggregateSchema.firstVersionWithTenants ? "tenant" : "''" }

    /// Opens the database at `path` read-only, to read the metrics of `metrics`.
    ///
    /// - Throws: ``AggregatorError/unreadableDatabase(path:_:)`` when it is missing or not an
    ///   aggregates database.
    public init(path: String, metrics: MetricTable = .standard) async throws(AggregatorError) {
        let executor = BlockingExecutor(name: "sqlite-queries")
        self.path = path
        self.executor = executor
        self.table = metrics
        (connection, schemaVersion, columns) = try await executor.run { () throws(AggregatorError) -> (SQLiteConnection, Int64, Set<String>) in
            let (connection, version) = try Self.open(path: path)
            do throws(SQLiteError) {
                return (connection, version, try AggregateMigration.existingColumns(connection))
            } catch {
                connection.close()
                throw .unreadableDatabase(path: path, error)
            }
        }
    }

    private static func open(path: String) throws(AggregatorError) -> (SQLiteConnection, Int64) {
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: path, readOnly: true)
        } catch {
            throw .unreadableDatabase(path: path, error)
        }
        let found = try AggregateSchema.storedVersion(connection, path: path)
        // A database not yet migrated by this relay's aggregator reads as it is (see readableVersions).
        guard AggregateSchema.readableVersions.contains(found) else {
            connection.close()
            throw AggregatorError.schemaMismatch(path: path, found: found, expected: AggregateSchema.version)
        }
        return (connection, found)
    }

    /// Closes the connection now, on its own thread (otherwise it closes when the actor goes away).
    /// Queries after this fail.
    public func close() {
        connection.close()
    }

    /// The covered positions, the deliveries of `tenant` (only `deliveryId` when given, at most
    /// `limit`) and, with `everything`, its registrations and (for every tenant only, since they
    /// count relays, not a tenant's events) the origins, all read in one read transaction: one
    /// snapshot, whatever the aggregator commits meanwhile.
    ///
    /// Read one by one, a transaction committed between two reads made the positions claim events
    /// that the counts, read first, did not hold yet (seen as 4 impressions of 8 counted "through"
    /// the last one, in a test run under AddressSanitizer).
    public func report(tenant: TenantSelection = .all, deliveryId: String? = nil, limit: Int? = nil, everything: Bool = true) throws(AggregatorError)
        -> AggregatesReport
    {
        do {
            // A deferred BEGIN takes the snapshot at the first read and holds it to the COMMIT.
            try connection.execute("BEGIN")
        } catch {
            throw .database(error)
        }
        do throws(AggregatorError) {
            let report = AggregatesReport(
                sequences: try coveredSequences(), deliveries: try deliveries(tenant: tenant, deliveryId: deliveryId, limit: limit),
                registrations: everything ? try registrations(tenant: tenant) : [], origins: everything && tenant == .all ? try origins() : [])
            // The reads are done; a COMMIT that fails must still end the transaction, or every
            // later BEGIN on this connection would fail.
            do throws(SQLiteError) { try connection.execute("COMMIT") } catch { try? connection.execute("ROLLBACK") }
            return report
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The log positions the aggregates cover: events `first ..< next`.
    public func coveredSequences() throws(AggregatorError) -> Range<UInt64> {
        do {
            let statement = try connection.prepare("SELECT first_sequence, next_sequence FROM aggregator_state WHERE id = 1")
            guard try statement.step() else { return 1..<1 }
            let first = UInt64(bitPattern: statement.int64(0))
            return first..<max(first, UInt64(bitPattern: statement.int64(1)))
        } catch {
            throw .database(error)
        }
    }

    /// The deliveries of `tenant`, most recently active first; only `deliveryId` when given.
    public func deliveries(tenant: TenantSelection = .all, deliveryId: String? = nil, limit: Int? = nil) throws(AggregatorError) -> [DeliveryCounts] {
        do {
            let metrics = table.perDelivery
            var sql =
                "SELECT \(tenantColumn), delivery_id, \(metrics.map { selected($0) + ", " }.joined())first_event_ns, last_event_ns FROM deliveries WHERE (?1 IS NULL OR \(tenantColumn) = ?1) AND (?2 IS NULL OR delivery_id = ?2)"
            sql += " ORDER BY last_event_ns DESC, \(tenantColumn), delivery_id"
            if let limit { sql += " LIMIT \(max(0, limit))" }
            let statement = try connection.prepare(sql)
            if let stored = tenant.storedName { try statement.bind(1, stored) }
            if let deliveryId { try statement.bind(2, deliveryId) }
            var rows: [DeliveryCounts] = []
            while try statement.step() {
                let times = Int32(2 + metrics.count)
                rows.append(
                    DeliveryCounts(
                        tenant: TenantName.displayName(stored: statement.text(0) ?? ""), deliveryId: statement.text(1) ?? "",
                        values: Dictionary(uniqueKeysWithValues: metrics.enumerated().map { ($1.name, statement.int64(Int32(2 + $0))) }),
                        firstEvent: EventTime(nanosecondsSinceEpoch: statement.int64(times), fractionDigits: 3),
                        lastEvent: EventTime(nanosecondsSinceEpoch: statement.int64(times + 1), fractionDigits: 3)
                    )
                )
            }
            return rows
        } catch {
            throw .database(error)
        }
    }

    /// Registrations of `tenant` per integration key and platform, most recently active first.
    public func registrations(tenant: TenantSelection = .all) throws(AggregatorError) -> [RegistrationCounts] {
        do {
            let metrics = table.perApp
            let statement = try connection.prepare(
                "SELECT \(tenantColumn), integration_key, platform, \(metrics.map { selected($0) + ", " }.joined())first_event_ns, last_event_ns FROM registrations WHERE ?1 IS NULL OR \(tenantColumn) = ?1 ORDER BY last_event_ns DESC, \(tenantColumn), integration_key, platform"
            )
            if let stored = tenant.storedName { try statement.bind(1, stored) }
            var rows: [RegistrationCounts] = []
            while try statement.step() {
                let times = Int32(3 + metrics.count)
                rows.append(
                    RegistrationCounts(
                        tenant: TenantName.displayName(stored: statement.text(0) ?? ""), integrationKey: statement.text(1) ?? "",
                        platform: Platform(rawValue: statement.text(2) ?? "") ?? .ios,
                        values: Dictionary(uniqueKeysWithValues: metrics.enumerated().map { ($1.name, statement.int64(Int32(3 + $0))) }),
                        firstEvent: EventTime(nanosecondsSinceEpoch: statement.int64(times), fractionDigits: 3),
                        lastEvent: EventTime(nanosecondsSinceEpoch: statement.int64(times + 1), fractionDigits: 3)
                    )
                )
            }
            return rows
        } catch {
            throw .database(error)
        }
    }

    /// The tenants with counts (a delivery or a registration), as ``TenantName/displayName(stored:)``
    /// shows them (`default` for the default tenant), in name order.
    public func countedTenants() throws(AggregatorError) -> [String] {
        do {
            let statement = try connection.prepare(
                "SELECT \(tenantColumn) FROM deliveries UNION SELECT \(tenantColumn) FROM registrations")
            var names: [String] = []
            while try statement.step() { names.append(TenantName.displayName(stored: statement.text(0) ?? "")) }
            return names.sorted()
        } catch {
            throw .database(error)
        }
    }

    /// Events handed on by other relays, per first origin and the relay they came through, the
    /// most recently active first.
    public func origins() throws(AggregatorError) -> [OriginCounts] {
        guard schemaVersion >= 2 else { return [] }
        do {
            let statement = try connection.prepare(
                "SELECT relay_id, via_relay_id, events, hits, registrations, epoch, last_sequence, first_event_ns, last_event_ns FROM relay_origins ORDER BY last_event_ns DESC, relay_id, via_relay_id"
            )
            var rows: [OriginCounts] = []
            while try statement.step() {
                let via = statement.text(1) ?? ""
                rows.append(
                    OriginCounts(
                        relayId: statement.text(0) ?? "", via: via.isEmpty ? nil : via, events: statement.int64(2), hits: statement.int64(3),
                        registrations: statement.int64(4), epoch: UInt32(clamping: statement.int64(5)),
                        lastSequence: UInt64(bitPattern: statement.int64(6)),
                        firstEvent: EventTime(nanosecondsSinceEpoch: statement.int64(7), fractionDigits: 3),
                        lastEvent: EventTime(nanosecondsSinceEpoch: statement.int64(8), fractionDigits: 3)
                    )
                )
            }
            return rows
        } catch {
            throw .database(error)
        }
    }
}

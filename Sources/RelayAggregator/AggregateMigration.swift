import RelayAggregates
import RelayLog
import RelaySQLite

/// Brings an aggregates database written by an earlier relay to ``AggregateSchema/version`` in place,
/// exactly: nothing is counted again and nothing is lost, so the log need not hold its events any more.
///
/// - Version 1 predates relay chains: no event it counted came from another relay, so the empty
///   `relay_origins` that ``AggregateSchema/create`` adds is exact.
/// - Versions 1 and 2 keep the distinct messages as one row each in `delivery_messages` (about 13
///   bytes a message on disk); version 3 keeps integer ids in ``MessageChunk``s and UUIDs as 16
///   bytes. Every row is carried over, in key order, then the old table is dropped.
/// - Versions 1 to 3 predate tenants: every row is the default tenant's. `deliveries`,
///   `registrations` and `registration_tokens` are rebuilt with a `tenant` column (`''`) first in
///   their keys, every row copied with its `delivery_ref`, so the tables keyed by it (the distinct
///   messages) stay as they are.
/// - Versions 1 to 4 keep push tokens in the clear in `registration_tokens`; version 5 keeps their
///   digests (``TokenDigest``). Every row is replaced by its digest's (distinct tokens have distinct
///   digests, so the counts stay). The caller vacuums the file afterwards, so the tokens' old pages go.
/// - A metric of the ``MetricTable`` that ``MetricTable/original`` lacks gets its column (`metric
///   <column>`), zero in every row: none of it was counted before.
///
/// These are one ordered list of named migrations (``steps(_:)``); a database runs the ones it
/// lacks, in order, in one transaction.
enum AggregateMigration {
    /// One migration of the list.
    struct Step: Sendable {
        /// Its name, as the log and `docs/seams/metrics.md` give it.
        var name: String
        /// The schema version it brings the database to, for the schema's own steps.
        var version: Int64?
        /// The metric whose column it adds, for a metric's step.
        var metric: AggregateMetric?
    }

    /// Every migration, in order: the schema's versions, then a column per metric of `table` the
    /// original table lacks (``MetricTable/original``).
    static func steps(_ table: MetricTable) -> [Step] {
        [
            Step(name: "2 relay origins", version: 2), Step(name: "3 message chunks", version: 3), Step(name: "4 tenants", version: 4),
            Step(name: "5 token digests", version: 5),
        ] + table.added.map { Step(name: "metric \($0.column)", metric: $0) }
    }

    /// What a migration did.
    struct Summary {
        /// The version the database had.
        var from: Int64
        /// Distinct messages carried over (from versions 1 and 2).
        var messages: Int
        /// Deliveries given the default tenant (from versions 1 to 3).
        var deliveries: Int
        /// The migrations that ran, in order.
        var steps: [String]
        /// Whether the schema's version changed (the file is compacted then).
        var changedVersion: Bool { from != AggregateSchema.version }
    }

    /// The migrations of `table` the database of `connection` (of schema `version`) lacks.
    ///
    /// - Throws: ``AggregatorError/schemaMismatch(path:found:expected:)`` for a version this relay
    ///   does not know how to bring up; ``AggregatorError/database(_:)`` when SQLite fails.
    static func pending(_ connection: SQLiteConnection, path: String, from version: Int64, table: MetricTable) throws(AggregatorError) -> [Step] {
        guard (1...AggregateSchema.version).contains(version) else {
            throw .schemaMismatch(path: path, found: version, expected: AggregateSchema.version)
        }
        let columns: Set<String>
        do {
            columns = try existingColumns(connection)
        } catch {
            throw .database(error)
        }
        return steps(table).filter { step in
            if let metric = step.metric { return !columns.contains(metric.column) }
            return version < step.version ?? 0
        }
    }

    /// The columns of `deliveries` and `registrations`.
    static func existingColumns(_ connection: SQLiteConnection) throws(SQLiteError) -> Set<String> {
        let statement = try connection.prepare(
            "SELECT name FROM pragma_table_info('deliveries') UNION ALL SELECT name FROM pragma_table_info('registrations')")
        defer { statement.finalize() }
        var names: Set<String> = []
        while try statement.step() { names.insert(statement.text(0) ?? "") }
        return names
    }

    /// Runs `steps` (``pending(_:path:from:table:)``) on the database of `connection` (at `path`,
    /// of schema `version`), inside the caller's transaction, after ``AggregateSchema/create`` ran.
    ///
    /// - Throws: ``AggregatorError/database(_:)`` when SQLite fails (the caller rolls back, and the
    ///   file keeps its old version and columns).
    static func migrate(_ connection: SQLiteConnection, path: String, from version: Int64, steps: [Step]) throws(AggregatorError) -> Summary {
        var messages = 0
        var deliveries = 0
        for step in steps {
            switch step.version {
            case 3: messages = try chunkMessages(connection, path: path)
            default: break
            }
            do {
                switch step.version {
                case AggregateSchema.firstVersionWithTenants: deliveries = try addTenants(connection)
                case AggregateSchema.firstVersionWithTokenDigests: try digestTokens(connection)
                default: break
                }
                // Version 2's only change, `relay_origins`, is made by `create` when missing.
                if let metric = step.metric { try connection.execute(AggregateSchema.addColumn(metric)) }
            } catch {
                throw .database(error)
            }
        }
        if version != AggregateSchema.version {
            do {
                try connection.execute("UPDATE aggregator_state SET schema_version = \(AggregateSchema.version) WHERE id = 1")
            } catch {
                throw .database(error)
            }
        }
        return Summary(from: version, messages: messages, deliveries: deliveries, steps: steps.map(\.name))
    }

    /// Rebuilds the three tables keyed by what tenants split with a `tenant` column of `''`, each
    /// row copied as it is (`delivery_ref` included), and the view over `deliveries` with them.
    /// Returns the number of deliveries.
    private static func addTenants(_ connection: SQLiteConnection) throws(SQLiteError) -> Int {
        // The view names `deliveries`: it goes first, and comes back over the new table.
        try connection.execute("DROP VIEW IF EXISTS delivery_stats")
        let deliveries = try rebuild(
            "deliveries", as: AggregateSchema.deliveriesTable,
            columns:
                "delivery_ref, delivery_id, impressions, opens, clicks, unique_impressions, unique_opens, unique_clicks, first_event_ns, last_event_ns",
            order: "delivery_ref", connection)
        try rebuild(
            "registrations", as: AggregateSchema.registrationsTable,
            columns: "integration_key, platform, registrations, distinct_tokens, first_event_ns, last_event_ns", order: "integration_key, platform",
            connection)
        try rebuild(
            "registration_tokens", as: AggregateSchema.registrationTokensTable, columns: "integration_key, platform, registration_token",
            order: "integration_key, platform, registration_token", connection)
        try connection.execute(AggregateSchema.deliveryStatsView)
        return deliveries
    }

    /// Replaces every token of `registration_tokens` by its digest, in a table made anew.
    private static func digestTokens(_ connection: SQLiteConnection) throws(SQLiteError) {
        try connection.execute(AggregateSchema.registrationTokensTable("registration_tokens_v5"))
        let read = try connection.prepare("SELECT tenant, integration_key, platform, registration_token FROM registration_tokens")
        defer { read.finalize() }
        let insert = try connection.prepare(
            "INSERT OR IGNORE INTO registration_tokens_v5 (tenant, integration_key, platform, registration_token) VALUES (?, ?, ?, ?)")
        defer { insert.finalize() }
        while try read.step() {
            insert.reset()
            try insert.bind(1, read.text(0) ?? "")
            try insert.bind(2, read.text(1) ?? "")
            try insert.bind(3, read.text(2) ?? "")
            try insert.bind(4, TokenDigest.hex(read.text(3) ?? ""))
            try insert.step()
        }
        try connection.execute("DROP TABLE registration_tokens")
        try connection.execute("ALTER TABLE registration_tokens_v5 RENAME TO registration_tokens")
    }

    /// Makes `table` anew as `create` defines it, every row copied (`columns`, in key `order`) with
    /// the default tenant's `tenant = ''`; returns the rows copied.
    @discardableResult
    private static func rebuild(
        _ table: String, as create: (String) -> String, columns: String, order: String, _ connection: SQLiteConnection
    ) throws(SQLiteError) -> Int {
        try connection.execute(create("\(table)_v4"))
        try connection.execute("INSERT INTO \(table)_v4 (tenant, \(columns)) SELECT '', \(columns) FROM \(table) ORDER BY \(order)")
        let rows = Int(connection.changes)
        try connection.execute("DROP TABLE \(table)")
        try connection.execute("ALTER TABLE \(table)_v4 RENAME TO \(table)")
        return rows
    }

    /// Versions 1 and 2: moves `delivery_messages` into chunks and UUID rows, then drops it.
    /// Returns the number of distinct messages carried over.
    private static func chunkMessages(_ connection: SQLiteConnection, path: String) throws(AggregatorError) -> Int {
        let sets: MessageSets
        do { sets = try MessageSets(connection: connection, path: path) } catch { throw .database(error) }
        defer { sets.finalize() }
        var messages = 0
        do {
            let rows = try connection.prepare("SELECT delivery_action, message_key FROM delivery_messages ORDER BY delivery_action, message_key")
            defer { rows.finalize() }
            // SQLite orders integers before text, and integers by value: each chunk's ids come
            // together, ascending.
            var current: (deliveryAction: Int64, chunk: Int64)?
            var lows: [UInt16] = []
            func flush() throws(AggregatorError) {
                guard let (deliveryAction, key) = current, !lows.isEmpty else { return }
                var chunk = MessageChunk()
                _ = chunk.insert(ascending: lows)
                try sets.write(chunk, deliveryAction: deliveryAction, chunk: key)
                lows.removeAll(keepingCapacity: true)
            }
            while try rows.step() {
                messages += 1
                let deliveryAction = rows.int64(0)
                if rows.isInteger(1) {
                    let value = rows.int64(1)
                    let key = (deliveryAction, MessageChunk.chunkKey(of: value))
                    if let current, current != key { try flush() }
                    current = key
                    lows.append(MessageChunk.low(of: value))
                } else {
                    try flush()
                    current = nil
                    let text = rows.text(1) ?? ""
                    _ = try sets.add(uuid: text, to: deliveryAction)
                }
            }
            try flush()
            try connection.execute("DROP TABLE delivery_messages")
        } catch let error as AggregatorError {
            throw error
        } catch let error as SQLiteError {
            throw .database(error)
        } catch {
            throw .database(SQLiteError(code: 1, message: "\(error)", context: path))
        }
        return messages
    }
}

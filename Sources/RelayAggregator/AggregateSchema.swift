import RelayAggregates
import RelaySQLite

/// The tables of `<data-dir>/aggregates.sqlite` (documented in `docs/aggregates.md`).
enum AggregateSchema {
    /// Bumped when the tables change. A database of version 1 to 4 is brought to 5 in place (see
    /// ``AggregateMigration``); one of any other version must be rebuilt from the log.
    static let version: Int64 = 5

    /// The first version whose `registration_tokens` hold each token's digest (``TokenDigest``)
    /// instead of the token.
    static let firstVersionWithTokenDigests: Int64 = 5

    /// The versions a reader of the counts (``AggregateQueries``) understands: versions before 4
    /// have no `tenant` columns (every row is the default tenant's) and version 1 has no
    /// `relay_origins`.
    static let readableVersions: ClosedRange<Int64> = 1...5

    /// The schema version the file says it has.
    static func storedVersion(_ connection: SQLiteConnection, path: String) throws(AggregatorError) -> Int64 {
        do {
            let statement = try connection.prepare("SELECT schema_version FROM aggregator_state WHERE id = 1")
            defer { statement.finalize() }
            guard try statement.step() else {
                throw AggregatorError.unreadableDatabase(path: path, SQLiteError(code: 1, message: "aggregator_state has no row", context: path))
            }
            return statement.int64(0)
        } catch let error as AggregatorError {
            throw error
        } catch let error as SQLiteError {
            throw .unreadableDatabase(path: path, error)
        } catch {
            throw .unreadableDatabase(path: path, SQLiteError(code: 1, message: "\(error)", context: path))
        }
    }

    /// The first version whose deliveries, registrations and tokens carry their tenant.
    static let firstVersionWithTenants: Int64 = 4

    /// A column definition per metric of `metrics`.
    private static func columns(_ metrics: [AggregateMetric]) -> String {
        metrics.map { "    \($0.column) INTEGER NOT NULL,\n" }.joined()
    }

    /// `deliveries` under `name`: one row per (tenant, delivery id), the default tenant's as `''`,
    /// with a column per metric of ``MetricTable/original`` (a migration adds the others:
    /// ``AggregateMigration``). Named so that the migration from version 3 builds its copy from the
    /// same text.
    static func deliveriesTable(_ name: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(name) (
            delivery_ref INTEGER PRIMARY KEY,
            tenant TEXT NOT NULL DEFAULT '',
            delivery_id TEXT NOT NULL,
        \(columns(MetricTable.original.perDelivery))    first_event_ns INTEGER NOT NULL,
            last_event_ns INTEGER NOT NULL,
            UNIQUE (tenant, delivery_id)
        );
        """
    }

    /// `registrations` under `name`: one row per (tenant, integration key, platform), with a column
    /// per per-app metric of ``MetricTable/original``.
    static func registrationsTable(_ name: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(name) (
            tenant TEXT NOT NULL DEFAULT '',
            integration_key TEXT NOT NULL,
            platform TEXT NOT NULL,
        \(columns(MetricTable.original.perApp))    first_event_ns INTEGER NOT NULL,
            last_event_ns INTEGER NOT NULL,
            PRIMARY KEY (tenant, integration_key, platform)
        ) WITHOUT ROWID;
        """
    }

    /// The column a migration adds for `metric` (a metric ``MetricTable/original`` lacks): zero in
    /// every existing row, which counted none of it.
    static func addColumn(_ metric: AggregateMetric) -> String {
        "ALTER TABLE \(metric.scope == .perDelivery ? "deliveries" : "registrations") ADD COLUMN \(metric.column) INTEGER NOT NULL DEFAULT 0"
    }

    /// `registration_tokens` under `name`: the distinct tokens of each tenant's app, each as its
    /// digest (``TokenDigest``) from version 5 on.
    static func registrationTokensTable(_ name: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(name) (
            tenant TEXT NOT NULL DEFAULT '',
            integration_key TEXT NOT NULL,
            platform TEXT NOT NULL,
            registration_token TEXT NOT NULL,
            PRIMARY KEY (tenant, integration_key, platform, registration_token)
        ) WITHOUT ROWID;
        """
    }

    /// The readable view of the deliveries, most recently active first.
    static let deliveryStatsView = """
        CREATE VIEW IF NOT EXISTS delivery_stats AS
            SELECT tenant, delivery_id, \(MetricTable.original.perDelivery.map(\.column).joined(separator: ", ")),
                   strftime('%Y-%m-%dT%H:%M:%fZ', first_event_ns / 1e9, 'unixepoch') AS first_event,
                   strftime('%Y-%m-%dT%H:%M:%fZ', last_event_ns / 1e9, 'unixepoch') AS last_event
            FROM deliveries ORDER BY last_event_ns DESC;
        """

    /// Every table and view, each created only when missing: on a database of an earlier version
    /// this leaves its tables as they are for ``AggregateMigration`` (so nothing here may name a
    /// column an earlier version lacks outside the tables' own definitions).
    static let create = """
        CREATE TABLE IF NOT EXISTS aggregator_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            schema_version INTEGER NOT NULL,
            next_sequence INTEGER NOT NULL,
            first_sequence INTEGER NOT NULL,
            updated_at TEXT NOT NULL
        );
        \(deliveriesTable("deliveries"))
        CREATE TABLE IF NOT EXISTS delivery_message_chunks (
            delivery_action INTEGER NOT NULL,
            chunk INTEGER NOT NULL,
            members BLOB NOT NULL,
            PRIMARY KEY (delivery_action, chunk)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS delivery_message_uuids (
            delivery_action INTEGER NOT NULL,
            message_uuid BLOB NOT NULL,
            PRIMARY KEY (delivery_action, message_uuid)
        ) WITHOUT ROWID;
        \(registrationsTable("registrations"))
        \(registrationTokensTable("registration_tokens"))
        CREATE TABLE IF NOT EXISTS erased_registrations (
            sequence INTEGER PRIMARY KEY
        );
        CREATE TABLE IF NOT EXISTS relay_origins (
            relay_id TEXT NOT NULL,
            via_relay_id TEXT NOT NULL,
            events INTEGER NOT NULL,
            hits INTEGER NOT NULL,
            registrations INTEGER NOT NULL,
            epoch INTEGER NOT NULL,
            last_sequence INTEGER NOT NULL,
            first_event_ns INTEGER NOT NULL,
            last_event_ns INTEGER NOT NULL,
            PRIMARY KEY (relay_id, via_relay_id)
        ) WITHOUT ROWID;
        \(deliveryStatsView)
        """

    /// A new delivery's row, every metric at zero: `?1` tenant, `?2` delivery id, `?3` and `?4` times.
    static func insertDelivery(_ table: MetricTable) -> String {
        let columns = table.perDelivery.map(\.column)
        return """
            INSERT INTO deliveries (tenant, delivery_id, \(columns.map { "\($0), " }.joined())first_event_ns, last_event_ns)
            VALUES (?, ?, \(columns.map { _ in "0, " }.joined())?, ?)
            """
    }

    /// Adds to a delivery's row: `?1` its `delivery_ref`, then one value per per-delivery metric in
    /// table order, then the first and last event times.
    static func addToDelivery(_ table: MetricTable) -> String {
        let columns = table.perDelivery.map(\.column)
        let sums = columns.enumerated().map { "    \($1) = \($1) + ?\($0 + 2),\n" }.joined()
        return """
            UPDATE deliveries SET
            \(sums)    first_event_ns = min(first_event_ns, ?\(columns.count + 2)),
                last_event_ns = max(last_event_ns, ?\(columns.count + 3))
            WHERE delivery_ref = ?1
            """
    }

    /// Adds to an app's row (made when missing): tenant, integration key, platform, one value per
    /// per-app metric in table order, then the first and last event times.
    static func upsertRegistration(_ table: MetricTable) -> String {
        let columns = table.perApp.map(\.column)
        return """
            INSERT INTO registrations (tenant, integration_key, platform, \(columns.map { "\($0), " }.joined())first_event_ns, last_event_ns)
            VALUES (?, ?, ?, \(columns.map { _ in "?, " }.joined())?, ?)
            ON CONFLICT (tenant, integration_key, platform) DO UPDATE SET
            \(columns.map { "    \($0) = \($0) + excluded.\($0),\n" }.joined())    first_event_ns = min(first_event_ns, excluded.first_event_ns),
                last_event_ns = max(last_event_ns, excluded.last_event_ns)
            """
    }

    // In an UPDATE every expression reads the row as it was, so `last_sequence` compares against
    // the old epoch before `epoch` moves.
    static let upsertOrigin = """
        INSERT INTO relay_origins (relay_id, via_relay_id, events, hits, registrations, epoch, last_sequence, first_event_ns, last_event_ns)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (relay_id, via_relay_id) DO UPDATE SET
            events = events + excluded.events,
            hits = hits + excluded.hits,
            registrations = registrations + excluded.registrations,
            last_sequence = CASE
                WHEN excluded.epoch > epoch THEN excluded.last_sequence
                WHEN excluded.epoch = epoch THEN max(last_sequence, excluded.last_sequence)
                ELSE last_sequence END,
            epoch = max(epoch, excluded.epoch),
            first_event_ns = min(first_event_ns, excluded.first_event_ns),
            last_event_ns = max(last_event_ns, excluded.last_event_ns)
        """
}

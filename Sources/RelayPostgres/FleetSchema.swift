import Logging
public import PostgresNIO
public import RelayAggregates

/// The fleet's tables in PostgreSQL (documented in `docs/aggregates-postgres.md`), created and
/// migrated by whichever relay starts first.
public enum FleetSchema {
    /// The version this relay writes and reads: 4, where deliveries, registrations and tokens are
    /// kept per tenant, tokens as their digests (`TokenDigest` of RelayLog), and each relay's
    /// erased registrations are remembered (`erased_registrations`).
    public static let version = 4

    /// The key of the advisory lock that serializes migrations across relays starting at once.
    static let migrationLock: Int64 = 0x6361_6D70_7265_6C79  // "camprely"

    /// Each migration takes the schema from `version - 1` to `version`; a relay runs every one its
    /// database lacks in one transaction (a fresh database runs them all, in order).
    ///
    /// A migration's statements never change once released: a database of version 1 must come out
    /// of migration 2 exactly as a fresh one does. After them come the migrations of the metrics
    /// (``metricMigrations(_:)``); ``migrationNames(_:)`` lists both, in order.
    static let migrations: [(version: Int, name: String, statements: [String])] = [
        (
            1, "1 counts",
            [
                """
                CREATE TABLE relay_positions (
                    relay_id uuid PRIMARY KEY,
                    epoch integer NOT NULL,
                    next_sequence bigint NOT NULL,
                    events bigint NOT NULL,
                    updated_at timestamptz NOT NULL
                )
                """,
                """
                CREATE TABLE deliveries (
                    delivery_ref bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    delivery_id text NOT NULL UNIQUE
                )
                """,
                """
                CREATE TABLE delivery_counts (
                    delivery_ref bigint NOT NULL,
                    relay_id uuid NOT NULL,
                    impressions bigint NOT NULL,
                    opens bigint NOT NULL,
                    clicks bigint NOT NULL,
                    unique_impressions bigint NOT NULL,
                    unique_opens bigint NOT NULL,
                    unique_clicks bigint NOT NULL,
                    first_event_ns bigint NOT NULL,
                    last_event_ns bigint NOT NULL,
                    PRIMARY KEY (delivery_ref, relay_id)
                )
                """,
                """
                CREATE TABLE delivery_messages (
                    delivery_action bigint NOT NULL,
                    message_key bigint NOT NULL,
                    PRIMARY KEY (delivery_action, message_key)
                )
                """,
                """
                CREATE TABLE delivery_message_uuids (
                    delivery_action bigint NOT NULL,
                    message_uuid uuid NOT NULL,
                    PRIMARY KEY (delivery_action, message_uuid)
                )
                """,
                """
                CREATE TABLE registration_counts (
                    integration_key text NOT NULL,
                    platform text NOT NULL,
                    relay_id uuid NOT NULL,
                    registrations bigint NOT NULL,
                    distinct_tokens bigint NOT NULL,
                    first_event_ns bigint NOT NULL,
                    last_event_ns bigint NOT NULL,
                    PRIMARY KEY (integration_key, platform, relay_id)
                )
                """,
                """
                CREATE TABLE registration_tokens (
                    integration_key text NOT NULL,
                    platform text NOT NULL,
                    registration_token text NOT NULL,
                    PRIMARY KEY (integration_key, platform, registration_token)
                )
                """,
                """
                CREATE VIEW delivery_stats AS
                    SELECT d.delivery_id,
                           sum(c.impressions)::bigint AS impressions, sum(c.opens)::bigint AS opens, sum(c.clicks)::bigint AS clicks,
                           sum(c.unique_impressions)::bigint AS unique_impressions, sum(c.unique_opens)::bigint AS unique_opens,
                           sum(c.unique_clicks)::bigint AS unique_clicks,
                           to_timestamp(min(c.first_event_ns) / 1e9) AS first_event, to_timestamp(max(c.last_event_ns) / 1e9) AS last_event,
                           count(*) AS relays
                    FROM delivery_counts c JOIN deliveries d USING (delivery_ref)
                    GROUP BY d.delivery_id
                    ORDER BY max(c.last_event_ns) DESC
                """,
            ]
        ),
        (
            // Tenants: the same delivery id, app or token under two tenants is two of them. Every
            // row of version 1 belongs to the default tenant (`''`), which relays before tenants
            // counted alone; `delivery_ref` values stay, so the tables keyed by it
            // (`delivery_counts`, `delivery_messages`, `delivery_message_uuids`) are not touched.
            // Each table is altered by one statement, so its old key is dropped and the new one
            // built in one pass; the ACCESS EXCLUSIVE locks they take are held to the commit.
            // Tables are taken in the order an aggregator's transaction writes them (tokens before
            // registration counts), so a relay of version 1 still counting cannot deadlock with it.
            2, "2 tenants",
            [
                """
                ALTER TABLE deliveries
                    ADD COLUMN tenant text NOT NULL DEFAULT '',
                    DROP CONSTRAINT deliveries_delivery_id_key,
                    ADD CONSTRAINT deliveries_tenant_delivery_id_key UNIQUE (tenant, delivery_id)
                """,
                """
                ALTER TABLE registration_tokens
                    ADD COLUMN tenant text NOT NULL DEFAULT '',
                    DROP CONSTRAINT registration_tokens_pkey,
                    ADD CONSTRAINT registration_tokens_pkey PRIMARY KEY (tenant, integration_key, platform, registration_token)
                """,
                """
                ALTER TABLE registration_counts
                    ADD COLUMN tenant text NOT NULL DEFAULT '',
                    DROP CONSTRAINT registration_counts_pkey,
                    ADD CONSTRAINT registration_counts_pkey PRIMARY KEY (tenant, integration_key, platform, relay_id)
                """,
                // A view's columns cannot be inserted before its existing ones: it is made anew.
                "DROP VIEW delivery_stats",
                """
                CREATE VIEW delivery_stats AS
                    SELECT d.tenant, d.delivery_id,
                           sum(c.impressions)::bigint AS impressions, sum(c.opens)::bigint AS opens, sum(c.clicks)::bigint AS clicks,
                           sum(c.unique_impressions)::bigint AS unique_impressions, sum(c.unique_opens)::bigint AS unique_opens,
                           sum(c.unique_clicks)::bigint AS unique_clicks,
                           to_timestamp(min(c.first_event_ns) / 1e9) AS first_event, to_timestamp(max(c.last_event_ns) / 1e9) AS last_event,
                           count(*) AS relays
                    FROM delivery_counts c JOIN deliveries d USING (delivery_ref)
                    GROUP BY d.tenant, d.delivery_id
                    ORDER BY max(c.last_event_ns) DESC
                """,
            ]
        ),
        (
            // No push token in the clear: each becomes its SHA-256 in lower-case hex, as relays of
            // this version count them (distinct tokens have distinct digests, so the counts stay).
            // A relay of version 2 would count tokens in the clear beside them, so it refuses this
            // version by name; a fleet moves to it together.
            3, "3 token digests",
            [
                """
                UPDATE registration_tokens
                    SET registration_token = encode(sha256(convert_to(registration_token, 'UTF8')), 'hex')
                """
            ]
        ),
        (
            // Erasure of a person (docs/privacy.md): the registrations of each relay the fleet never
            // counts, or counts no more. A relay of version 3 would count an erased entry's sequence
            // as nothing without remembering it, and an erasure's change after it twice: it refuses
            // this version by name, and a fleet moves to it together.
            4, "4 erased registrations",
            [
                """
                CREATE TABLE erased_registrations (
                    relay_id uuid NOT NULL,
                    sequence bigint NOT NULL,
                    PRIMARY KEY (relay_id, sequence)
                )
                """
            ]
        ),
    ]

    /// The migrations of the metrics of `table` ``MetricTable/original`` lacks, in table order: each
    /// adds its column to this relay's rows (`delivery_counts` or `registration_counts`), zero in
    /// every existing row, which counted none of it. A database that has the column skips it.
    static func metricMigrations(_ table: MetricTable) -> [(name: String, table: String, column: String)] {
        table.added.map { metric in
            ("metric \(metric.column)", metric.scope == .perDelivery ? "delivery_counts" : "registration_counts", metric.column)
        }
    }

    /// The names of every migration of a backend counting `table`, in the order they run.
    public static func migrationNames(_ table: MetricTable) -> [String] { migrations.map(\.name) + metricMigrations(table).map(\.name) }

    /// Why the schema cannot be used.
    public struct Mismatch: Error, Sendable, CustomStringConvertible {
        /// The version found in the database.
        public var found: Int
        /// What is wrong and what to do.
        public var description: String {
            "the database has fleet schema version \(found), newer than this relay's \(FleetSchema.version): upgrade this relay (every relay of a fleet should run the same version)"
        }
    }

    /// Brings the database to ``version``, under an advisory lock so that relays starting at once
    /// migrate it one after the other (the later ones find it done). Returns the version found
    /// before.
    ///
    /// - Throws: ``Mismatch`` when the database is newer than this relay; the database's error
    ///   otherwise (and then nothing of the migration is applied).
    @discardableResult
    public static func migrate(_ connection: PostgresConnection, logger: Logger) async throws -> Int {
        try await migrate(connection, upTo: version, logger: logger)
    }

    /// Brings the database to ``version`` and to the columns of `table`'s metrics
    /// (``metricMigrations(_:)``), in one transaction. Returns the version found before.
    ///
    /// - Throws: ``Mismatch`` when the database is newer than this relay; the database's error
    ///   otherwise (and then nothing of the migration is applied).
    @discardableResult
    public static func migrate(_ connection: PostgresConnection, table: MetricTable, logger: Logger) async throws -> Int {
        try await migrate(connection, upTo: version, table: table, logger: logger)
    }

    /// Brings the database to `target` (at most ``version``): the migrations it lacks up to
    /// `target`, in one transaction. ``migrate(_:logger:)`` is this with ``version``; a lower
    /// `target` makes a database as an earlier release left it, for the tests of later migrations.
    ///
    /// - Throws: ``Mismatch`` when the database is newer than this relay; the database's error
    ///   otherwise (and then nothing of the migration is applied).
    @discardableResult
    package static func migrate(_ connection: PostgresConnection, upTo target: Int, table: MetricTable = .standard, logger: Logger) async throws
        -> Int
    {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS campaign_relay_schema (
                    version integer PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
            var found = 0
            for try await (value) in try await connection.query("SELECT coalesce(max(version), 0) FROM campaign_relay_schema", logger: logger)
                .decode(Int.self)
            {
                found = value
            }
            guard found <= version else { throw Mismatch(found: found) }
            for migration in migrations where migration.version > found && migration.version <= target {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO campaign_relay_schema (version) VALUES (\(migration.version))", logger: logger)
                logger.notice("migrated the fleet schema", metadata: ["version": "\(migration.version)"])
            }
            for migration in metricMigrations(table) {
                var exists = false
                for try await _ in try await connection.query(
                    """
                    SELECT 1 FROM information_schema.columns
                    WHERE table_schema = current_schema() AND table_name = \(migration.table) AND column_name = \(migration.column)
                    """, logger: logger
                ).decode(Int.self) {
                    exists = true
                }
                guard !exists else { continue }
                try await connection.query(
                    PostgresQuery(unsafeSQL: "ALTER TABLE \(migration.table) ADD COLUMN \(migration.column) bigint NOT NULL DEFAULT 0"),
                    logger: logger)
                logger.notice("migrated the fleet schema", metadata: ["migration": "\(migration.name)"])
            }
            return found
        }
    }
}

/// The tables of `<data-dir>/aggregates.sqlite` (documented in `docs/aggregates.md`).
enum AggregateSchema {
    /// Bumped when the tables change. A database of version 1 or 2 is brought to 3 in place (see
    /// ``AggregateMigration``); one of any other version must be rebuilt from the log.
    static let version: Int64 = 3

    /// The versions a reader of the counts (``AggregateQueries``) understands: their `deliveries`
    /// and `registrations` read the same; version 1 has no `relay_origins`.
    static let readableVersions: ClosedRange<Int64> = 1...3

    static let create = """
        CREATE TABLE IF NOT EXISTS aggregator_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            schema_version INTEGER NOT NULL,
            next_sequence INTEGER NOT NULL,
            first_sequence INTEGER NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS deliveries (
            delivery_ref INTEGER PRIMARY KEY,
            delivery_id TEXT NOT NULL UNIQUE,
            impressions INTEGER NOT NULL,
            opens INTEGER NOT NULL,
            clicks INTEGER NOT NULL,
            unique_impressions INTEGER NOT NULL,
            unique_opens INTEGER NOT NULL,
            unique_clicks INTEGER NOT NULL,
            first_event_ns INTEGER NOT NULL,
            last_event_ns INTEGER NOT NULL
        );
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
        CREATE TABLE IF NOT EXISTS registrations (
            integration_key TEXT NOT NULL,
            platform TEXT NOT NULL,
            registrations INTEGER NOT NULL,
            distinct_tokens INTEGER NOT NULL,
            first_event_ns INTEGER NOT NULL,
            last_event_ns INTEGER NOT NULL,
            PRIMARY KEY (integration_key, platform)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS registration_tokens (
            integration_key TEXT NOT NULL,
            platform TEXT NOT NULL,
            registration_token TEXT NOT NULL,
            PRIMARY KEY (integration_key, platform, registration_token)
        ) WITHOUT ROWID;
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
        CREATE VIEW IF NOT EXISTS delivery_stats AS
            SELECT delivery_id, impressions, opens, clicks, unique_impressions, unique_opens, unique_clicks,
                   strftime('%Y-%m-%dT%H:%M:%fZ', first_event_ns / 1e9, 'unixepoch') AS first_event,
                   strftime('%Y-%m-%dT%H:%M:%fZ', last_event_ns / 1e9, 'unixepoch') AS last_event
            FROM deliveries ORDER BY last_event_ns DESC;
        """

    static let insertDelivery = """
        INSERT INTO deliveries (delivery_id, impressions, opens, clicks, unique_impressions, unique_opens, unique_clicks, first_event_ns, last_event_ns)
        VALUES (?, 0, 0, 0, 0, 0, 0, ?, ?)
        """

    static let addToDelivery = """
        UPDATE deliveries SET
            impressions = impressions + ?2,
            opens = opens + ?3,
            clicks = clicks + ?4,
            unique_impressions = unique_impressions + ?5,
            unique_opens = unique_opens + ?6,
            unique_clicks = unique_clicks + ?7,
            first_event_ns = min(first_event_ns, ?8),
            last_event_ns = max(last_event_ns, ?9)
        WHERE delivery_ref = ?1
        """

    static let upsertRegistration = """
        INSERT INTO registrations (integration_key, platform, registrations, distinct_tokens, first_event_ns, last_event_ns)
        VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (integration_key, platform) DO UPDATE SET
            registrations = registrations + excluded.registrations,
            distinct_tokens = distinct_tokens + excluded.distinct_tokens,
            first_event_ns = min(first_event_ns, excluded.first_event_ns),
            last_event_ns = max(last_event_ns, excluded.last_event_ns)
        """

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

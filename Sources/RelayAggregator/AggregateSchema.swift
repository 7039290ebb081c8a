/// The tables of `<data-dir>/aggregates.sqlite` (documented in `docs/aggregates.md`).
enum AggregateSchema {
    /// Bumped when the tables change; a database of another version is rebuilt from the log.
    static let version: Int64 = 1

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
        CREATE TABLE IF NOT EXISTS delivery_messages (
            delivery_action INTEGER NOT NULL,
            message_key BLOB NOT NULL,
            PRIMARY KEY (delivery_action, message_key)
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
}

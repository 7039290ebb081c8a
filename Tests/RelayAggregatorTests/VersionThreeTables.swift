/// The tables of aggregates schema version 3 that tenants changed, frozen as that release created
/// them: tests that build a database of an earlier version from a current one take it back to these
/// first, so the migration meets the tables an earlier relay really wrote, not today's with an old
/// version number.
enum VersionThreeTables {
    /// Rebuilds `deliveries`, `registrations`, `registration_tokens` and `delivery_stats` as version
    /// 3 had them (no `tenant`; a delivery id unique alone), keeping every row and `delivery_ref`.
    static let downgrade = """
        DROP VIEW delivery_stats;
        CREATE TABLE deliveries_v3 (
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
        INSERT INTO deliveries_v3 SELECT delivery_ref, delivery_id, impressions, opens, clicks, unique_impressions, unique_opens,
            unique_clicks, first_event_ns, last_event_ns FROM deliveries;
        DROP TABLE deliveries;
        ALTER TABLE deliveries_v3 RENAME TO deliveries;
        CREATE TABLE registrations_v3 (
            integration_key TEXT NOT NULL,
            platform TEXT NOT NULL,
            registrations INTEGER NOT NULL,
            distinct_tokens INTEGER NOT NULL,
            first_event_ns INTEGER NOT NULL,
            last_event_ns INTEGER NOT NULL,
            PRIMARY KEY (integration_key, platform)
        ) WITHOUT ROWID;
        INSERT INTO registrations_v3 SELECT integration_key, platform, registrations, distinct_tokens, first_event_ns, last_event_ns
            FROM registrations;
        DROP TABLE registrations;
        ALTER TABLE registrations_v3 RENAME TO registrations;
        CREATE TABLE registration_tokens_v3 (
            integration_key TEXT NOT NULL,
            platform TEXT NOT NULL,
            registration_token TEXT NOT NULL,
            PRIMARY KEY (integration_key, platform, registration_token)
        ) WITHOUT ROWID;
        INSERT INTO registration_tokens_v3 SELECT integration_key, platform, registration_token FROM registration_tokens;
        DROP TABLE registration_tokens;
        ALTER TABLE registration_tokens_v3 RENAME TO registration_tokens;
        CREATE VIEW delivery_stats AS
            SELECT delivery_id, impressions, opens, clicks, unique_impressions, unique_opens, unique_clicks,
                   strftime('%Y-%m-%dT%H:%M:%fZ', first_event_ns / 1e9, 'unixepoch') AS first_event,
                   strftime('%Y-%m-%dT%H:%M:%fZ', last_event_ns / 1e9, 'unixepoch') AS last_event
            FROM deliveries ORDER BY last_event_ns DESC;
        UPDATE aggregator_state SET schema_version = 3;
        """
}

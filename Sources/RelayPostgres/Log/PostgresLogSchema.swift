import Logging
import PostgresNIO

/// The tables of the log kept in PostgreSQL (docs/postgres-log.md): streams, frames, cursors and
/// forwarding leases, dead letters, unfinished erasures' plans and `Idempotency-Key`s, beside the fleet's tables in the same database.
enum PostgresLogSchema {
    /// Created once per database, under an advisory lock so that relays starting together do not
    /// race on `CREATE TABLE IF NOT EXISTS` (which is not safe against itself).
    static let statements: [String] = [
        """
        CREATE TABLE IF NOT EXISTS relay_log_streams (
            stream text PRIMARY KEY,
            relay_id text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            alive_until timestamptz,
            writer bigint NOT NULL DEFAULT 0
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS relay_log_frames (
            stream text NOT NULL,
            first_sequence bigint NOT NULL,
            event_count integer NOT NULL,
            span bigint NOT NULL,
            frame bytea NOT NULL,
            stored_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (stream, first_sequence)
        )
        """,
        "CREATE INDEX IF NOT EXISTS relay_log_frames_span ON relay_log_frames (stream, span)",
        """
        CREATE TABLE IF NOT EXISTS relay_log_cursors (
            stream text NOT NULL,
            consumer text NOT NULL,
            position bigint NOT NULL,
            PRIMARY KEY (stream, consumer)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS relay_log_leases (
            stream text PRIMARY KEY,
            holder text NOT NULL,
            token bigint NOT NULL,
            expires_at timestamptz NOT NULL
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS relay_dead_letters (
            id bigserial PRIMARY KEY,
            stream text NOT NULL,
            sequence bigint NOT NULL,
            tenant text NOT NULL,
            event_json text NOT NULL,
            url text NOT NULL,
            status integer NOT NULL,
            response_body text NOT NULL,
            reason text NOT NULL,
            dead_lettered_at text NOT NULL,
            requeued_at text,
            requeued_sequence bigint
        )
        """,
        "CREATE INDEX IF NOT EXISTS relay_dead_letters_stream ON relay_dead_letters (stream, id)",
        """
        CREATE TABLE IF NOT EXISTS relay_erasure_plans (
            stream text NOT NULL,
            id text NOT NULL,
            requested_at text NOT NULL,
            plan text NOT NULL,
            PRIMARY KEY (stream, id)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS relay_idempotency_keys (
            stream text NOT NULL,
            key text NOT NULL,
            digest bigint NOT NULL,
            start_sequence bigint NOT NULL,
            default_time_ns bigint NOT NULL,
            status integer,
            body text,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (stream, key)
        )
        """,
    ]

    /// The advisory lock key that serialises creating the tables ("crlog" in ASCII).
    static let lockKey: Int64 = 0x63_72_6C_6F_67

    /// Creates the tables that are missing, in one transaction.
    static func create(on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            for statement in statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
    }
}

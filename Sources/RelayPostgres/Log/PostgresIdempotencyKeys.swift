import PostgresNIO
public import RelayCore

/// The `Idempotency-Key`s of `POST /v1/events` of a relay on the log in PostgreSQL
/// (`relay_idempotency_keys`, docs/postgres-log.md), kept under the relay's stream beside its log:
/// a relay started again on an empty data directory under the same name answers a batch resent
/// with a key it recorded before as it did then, and stores its events once.
///
/// Its calls are on the request's path: each waits at most 5 s, as an append does, and a failure
/// answers the request 503.
public actor PostgresIdempotencyKeys: IdempotencyTable {
    /// The stream whose keys these are.
    public nonisolated let stream: String
    private let link: PostgresLink
    private var tablesMade = false

    /// The keys of `stream` in the log database at `location`.
    public init(location: PostgresLocation, stream: String) {
        self.stream = stream
        link = PostgresLink(location: location, deadline: .seconds(5), connectDeadline: .seconds(5), logger: location.quietLogger)
    }

    /// Closes the connection.
    public func close() async {
        await link.close()
    }

    /// Runs `body` once the log's tables exist (a database written by an older relay gets this one too).
    private func run<Value: Sendable>(_ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> Value) async throws -> Value {
        let makeTables = !tablesMade
        let value = try await link.run { connection, logger in
            if makeTables { try await PostgresLogSchema.create(on: connection, logger: logger) }
            return try await body(connection, logger)
        }
        tablesMade = true
        return value
    }

    public func record(of key: String) async throws -> IdempotencyRecord? {
        let stream = self.stream
        return try await run { connection, logger in
            var found: IdempotencyRecord?
            for try await (digest, start, time, status, body) in try await connection.query(
                """
                SELECT digest, start_sequence, default_time_ns, status, body FROM relay_idempotency_keys
                WHERE stream = \(stream) AND key = \(key)
                """, logger: logger
            ).decode((Int64, Int64, Int64, Int32?, String?).self) {
                found = IdempotencyRecord(
                    digest: UInt64(bitPattern: digest), startSequence: UInt64(bitPattern: start), defaultTimeNanoseconds: time,
                    status: status.map(Int.init), body: body)
            }
            return found
        }
    }

    public func recordPending(_ key: String, digest: UInt64, startSequence: UInt64, defaultTimeNanoseconds: Int64) async throws {
        let (stream, digest, start) = (self.stream, Int64(bitPattern: digest), Int64(bitPattern: startSequence))
        _ = try await run { connection, logger in
            try await connection.query(
                """
                INSERT INTO relay_idempotency_keys (stream, key, digest, start_sequence, default_time_ns, status, body, created_at)
                VALUES (\(stream), \(key), \(digest), \(start), \(defaultTimeNanoseconds), NULL, NULL, now())
                ON CONFLICT (stream, key) DO UPDATE SET digest = excluded.digest, start_sequence = excluded.start_sequence,
                    default_time_ns = excluded.default_time_ns, status = NULL, body = NULL, created_at = now()
                """, logger: logger)
        }
    }

    public func recordCompleted(_ key: String, status: Int, body: String) async throws {
        let (stream, code) = (self.stream, Int32(clamping: status))
        _ = try await run { connection, logger in
            try await connection.query(
                "UPDATE relay_idempotency_keys SET status = \(code), body = \(body) WHERE stream = \(stream) AND key = \(key)", logger: logger)
        }
    }

    public func forget(olderThanSeconds seconds: Int64) async throws {
        let stream = self.stream
        _ = try await run { connection, logger in
            try await connection.query(
                "DELETE FROM relay_idempotency_keys WHERE stream = \(stream) AND created_at < now() - make_interval(secs => \(Double(seconds)))",
                logger: logger)
        }
    }
}

import PostgresNIO
public import RelayForwarding

/// The dead letters of a relay on the log in PostgreSQL (`relay_dead_letters`, docs/postgres-log.md):
/// kept in the log's database under the relay's stream, so that a relay whose disk is lost loses
/// none, and another relay (or `deadletter list --log-postgres-url`) can show and re-queue them.
///
/// A relay's lanes store a letter only while it holds the lease of the stream the event came
/// from, checked in the same statement against the token it was granted (as a lane's cursor is,
/// ``StreamLeaseFence``): a relay that lost the lease (frozen, partitioned) cannot add a letter
/// for an event the stream's adopter now forwards. Commands (no `fence`) store none.
public actor PostgresDeadLetters: DeadLetterTable {
    /// The stream whose letters the reads, counts, deletes and reseals see.
    public nonisolated let stream: String
    private let link: PostgresLink
    /// For the counts `/v1/status` and `/metrics` show every second: a database that does not
    /// answer (a partition) costs them 2 s, not the 20 s a letter's insert may wait.
    private let countLink: PostgresLink
    private let fence: StreamLeaseFence?
    private var tablesMade = false

    /// The letters of `stream` in the log database at `location`; `fence`: the leases of the
    /// serving relay, under which its lanes store letters.
    public init(location: PostgresLocation, stream: String, fence: StreamLeaseFence?) {
        self.stream = stream
        self.fence = fence
        link = PostgresLink(location: location, deadline: .seconds(10), logger: location.quietLogger)
        countLink = PostgresLink(location: location, deadline: .seconds(2), connectDeadline: .seconds(2), logger: location.quietLogger)
    }

    /// Closes the connections.
    public func close() async {
        await link.close()
        await countLink.close()
    }

    /// Runs `body` on the link once the log's tables exist (made as the log makes them: a
    /// database first met by a command, or made by an older relay, gets this table too).
    private func run<Value: Sendable>(
        _ operation: String, on chosen: PostgresLink? = nil, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> Value
    ) async throws(DeadLetterTableError) -> Value {
        let makeTables = !tablesMade
        do {
            let value = try await (chosen ?? link).run { connection, logger in
                if makeTables { try await PostgresLogSchema.create(on: connection, logger: logger) }
                return try await body(connection, logger)
            }
            tablesMade = true
            return value
        } catch {
            throw DeadLetterTableError(operation, reason: "\(error)")
        }
    }

    public func insert(_ letter: StoredDeadLetter, stream: String?) async throws(DeadLetterTableError) {
        let target = stream ?? self.stream
        let operation = "storing a dead letter of stream \(target) in PostgreSQL"
        let lease = fence.map { $0.current(for: target) }
        if case .some(nil) = lease {
            throw DeadLetterTableError(operation, reason: "this relay does not hold the stream's lease now; the lane tries again once it does")
        }
        let (sequence, tenant, json, url, body) = (
            Int64(bitPattern: letter.sequence), letter.tenant, letter.values.eventJSON, letter.values.url, letter.values.responseBody
        )
        let (status, reason, at) = (Int64(letter.status), letter.reason, letter.deadLetteredAt)
        let stored = try await run(operation) { connection, logger in
            let rows: PostgresRowSequence
            if case .some(let lease?) = lease {
                rows = try await connection.query(
                    """
                    INSERT INTO relay_dead_letters (stream, sequence, tenant, event_json, url, status, response_body, reason, dead_lettered_at)
                    SELECT \(target), \(sequence), \(tenant), \(json), \(url), \(status), \(body), \(reason), \(at) WHERE EXISTS (
                        SELECT 1 FROM relay_log_leases WHERE stream = \(target) AND holder = \(lease.holder) AND token = \(lease.token))
                    RETURNING 1
                    """, logger: logger)
            } else {
                rows = try await connection.query(
                    """
                    INSERT INTO relay_dead_letters (stream, sequence, tenant, event_json, url, status, response_body, reason, dead_lettered_at)
                    VALUES (\(target), \(sequence), \(tenant), \(json), \(url), \(status), \(body), \(reason), \(at))
                    RETURNING 1
                    """, logger: logger)
            }
            var any = false
            for try await _ in rows { any = true }
            return any
        }
        guard stored else {
            throw DeadLetterTableError(operation, reason: "this relay does not hold the stream's lease now; the lane tries again once it does")
        }
    }

    public func letters(tenant: String?, includeRequeued: Bool, limit: Int?) async throws(DeadLetterTableError) -> [StoredDeadLetter] {
        let (stream, count) = (self.stream, limit.map { Int64(max(0, $0)) })
        return try await run("reading the dead letters of stream \(stream) from PostgreSQL") { connection, logger in
            // LIMIT NULL is no limit.
            let rows = try await connection.query(
                """
                SELECT id, sequence, tenant, event_json, url, status, response_body, reason, dead_lettered_at, requeued_at, requeued_sequence
                FROM relay_dead_letters
                WHERE stream = \(stream) AND (\(tenant)::text IS NULL OR tenant = \(tenant)) AND (\(includeRequeued) OR requeued_at IS NULL)
                ORDER BY id LIMIT \(count)
                """, logger: logger)
            var letters: [StoredDeadLetter] = []
            for try await (id, sequence, tenant, json, url, status, body, reason, at, requeuedAt, requeuedSequence) in rows.decode(
                (Int64, Int64, String, String, String, Int32, String, String, String, String?, Int64?).self)
            {
                letters.append(
                    StoredDeadLetter(
                        id: id, sequence: UInt64(bitPattern: sequence), tenant: tenant,
                        values: DeadLetterValues(id: id, eventJSON: json, url: url, responseBody: body), status: Int(status), reason: reason,
                        deadLetteredAt: at, requeuedAt: requeuedAt, requeuedSequence: requeuedSequence.map { UInt64(bitPattern: $0) }))
            }
            return letters
        }
    }

    public func markRequeued(id: Int64, at: String, sequence: UInt64) async throws(DeadLetterTableError) -> Bool {
        let (stream, value) = (self.stream, Int64(bitPattern: sequence))
        return try await run("marking dead letter \(id) of stream \(stream) re-queued in PostgreSQL") { connection, logger in
            var any = false
            for try await _ in try await connection.query(
                """
                UPDATE relay_dead_letters SET requeued_at = \(at), requeued_sequence = \(value)
                WHERE stream = \(stream) AND id = \(id) RETURNING 1
                """, logger: logger)
            { any = true }
            return any
        }
    }

    public func pendingCountsByTenant() async throws(DeadLetterTableError) -> [String: Int] {
        let stream = self.stream
        return try await run("counting the dead letters of stream \(stream) in PostgreSQL", on: countLink) { connection, logger in
            var counts: [String: Int] = [:]
            for try await (tenant, count) in try await connection.query(
                "SELECT tenant, count(*) FROM relay_dead_letters WHERE stream = \(stream) AND requeued_at IS NULL GROUP BY tenant", logger: logger
            ).decode((String, Int64).self) {
                counts[tenant] = Int(count)
            }
            return counts
        }
    }

    public func delete(ids: [Int64]) async throws(DeadLetterTableError) -> Int {
        let stream = self.stream
        return try await run("deleting dead letters of stream \(stream) from PostgreSQL") { connection, logger in
            var deleted = 0
            for try await _ in try await connection.query(
                "DELETE FROM relay_dead_letters WHERE stream = \(stream) AND id = ANY(\(ids)::bigint[]) RETURNING 1", logger: logger)
            { deleted += 1 }
            return deleted
        }
    }

    public func replaceValues(_ values: [DeadLetterValues]) async throws(DeadLetterTableError) -> Int {
        let stream = self.stream
        let (ids, events, urls, bodies) = (values.map(\.id), values.map(\.eventJSON), values.map(\.url), values.map(\.responseBody))
        return try await run("sealing the dead letters of stream \(stream) anew in PostgreSQL") { connection, logger in
            // One statement: all or none.
            var replaced = 0
            for try await _ in try await connection.query(
                """
                UPDATE relay_dead_letters d SET event_json = v.event_json, url = v.url, response_body = v.response_body
                FROM unnest(\(ids)::bigint[], \(events)::text[], \(urls)::text[], \(bodies)::text[]) AS v(id, event_json, url, response_body)
                WHERE d.stream = \(stream) AND d.id = v.id RETURNING 1
                """, logger: logger)
            { replaced += 1 }
            return replaced
        }
    }
}

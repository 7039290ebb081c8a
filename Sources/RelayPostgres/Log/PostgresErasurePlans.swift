import Foundation
import Logging
import PostgresNIO
public import RelayLog

/// The plans of a stream's unfinished erasures, kept beside the stream (`relay_erasure_plans`,
/// docs/postgres-log.md) rather than in a data directory: the relay that opens the stream next
/// (its own after a restart, or the relay that adopts it after its relay stopped for good) masks
/// their registrations from its first read and finishes them.
///
/// With a `fence`, a plan is stored only while this relay holds the stream's lease, checked in the
/// same statement against the token it was granted: an erasure of a stream is made by the relay
/// that forwards it, whose lanes mask the registrations at once. A relay that lost the lease is
/// refused, since the stream's new holder opened it without that plan.
///
/// Its calls block on a connection of their own: run them on a thread made for blocking calls.
public struct PostgresErasurePlans: ErasurePlanStore {
    /// The stream whose plans these are.
    public let stream: String
    let location: PostgresLocation
    let fence: StreamLeaseFence?

    /// The plans of `stream` in the log database at `location`, stored under `fence`'s lease when given.
    public init(location: PostgresLocation, stream: String, fence: StreamLeaseFence?) {
        self.location = location
        self.stream = stream
        self.fence = fence
    }

    public var place: String { "stream \(stream) in PostgreSQL" }

    private func run<Value: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> Value
    ) throws(LogError) -> Value {
        let link = PostgresLink(location: location, deadline: .seconds(30), logger: location.quietLogger)
        defer { Task { await link.close() } }
        do {
            return try BlockingPostgres.wait {
                try await link.run { connection, logger in
                    try await PostgresLogSchema.create(on: connection, logger: logger)
                    return try await body(connection, logger)
                }
            }
        } catch {
            throw .storeUnavailable("\(operation) of \(place) at \(location): \(error)")
        }
    }

    public func store(_ plan: ErasurePlan) throws(LogError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text: String
        do {
            text = String(decoding: try encoder.encode(plan), as: UTF8.self)
        } catch {
            throw .storeUnavailable("encoding the plan of erasure \(plan.id): \(error)")
        }
        let (stream, id, requestedAt) = (self.stream, plan.id, plan.requestedAt)
        let lease = fence.map { $0.current(for: stream) }
        if case .some(nil) = lease { throw Self.notHeld(plan, stream: stream) }
        let stored = try run("storing the plan of erasure \(id) (nothing was erased; try again)") { connection, logger in
            let rows: PostgresRowSequence
            if case .some(let lease?) = lease {
                rows = try await connection.query(
                    """
                    INSERT INTO relay_erasure_plans (stream, id, requested_at, plan)
                    SELECT \(stream), \(id), \(requestedAt), \(text) WHERE EXISTS (
                        SELECT 1 FROM relay_log_leases WHERE stream = \(stream) AND holder = \(lease.holder) AND token = \(lease.token))
                    ON CONFLICT (stream, id) DO UPDATE SET plan = excluded.plan
                    RETURNING 1
                    """, logger: logger)
            } else {
                rows = try await connection.query(
                    """
                    INSERT INTO relay_erasure_plans (stream, id, requested_at, plan) VALUES (\(stream), \(id), \(requestedAt), \(text))
                    ON CONFLICT (stream, id) DO UPDATE SET plan = excluded.plan
                    RETURNING 1
                    """, logger: logger)
            }
            var any = false
            for try await _ in rows { any = true }
            return any
        }
        guard stored else { throw Self.notHeld(plan, stream: stream) }
    }

    private static func notHeld(_ plan: ErasurePlan, stream: String) -> LogError {
        .storeUnavailable(
            "stream \(stream) is forwarded by another relay now (this relay does not hold its lease): erasure \(plan.id) changed nothing; "
                + "send it again in a few seconds, or to the relay that holds the stream")
    }

    public func remove(_ plan: ErasurePlan) throws(LogError) {
        let (stream, id) = (self.stream, plan.id)
        _ = try run("removing the plan of finished erasure \(id)") { connection, logger in
            try await connection.query("DELETE FROM relay_erasure_plans WHERE stream = \(stream) AND id = \(id)", logger: logger)
        }
    }

    public func pending(skippingUnreadable: Bool) throws(LogError) -> [ErasurePlan] {
        let stream = self.stream
        let rows = try run("reading the unfinished erasures") { connection, logger in
            var rows: [(String, String)] = []
            for try await row in try await connection.query(
                "SELECT id, plan FROM relay_erasure_plans WHERE stream = \(stream) ORDER BY requested_at, id", logger: logger
            ).decode((String, String).self) {
                rows.append(row)
            }
            return rows
        }
        var plans: [ErasurePlan] = []
        for (id, text) in rows {
            do {
                plans.append(try JSONDecoder().decode(ErasurePlan.self, from: Data(text.utf8)))
            } catch {
                if skippingUnreadable { continue }
                throw .unreadableErasurePlan(path: "\(place), plan \(id)", reason: "\(error)")
            }
        }
        return plans
    }
}

package import Logging
package import PostgresNIO
package import RelayAggregates
import RelayCore

/// The fleet's PostgreSQL as an ``AggregateBackend``: one relay's counts, columns and migrations
/// from its ``MetricTable``, kept beside the other relays' (`delivery_counts` and
/// `registration_counts` have a row per relay; unique counts are fleet-wide).
///
/// An actor: it keeps the `delivery_ref` of each delivery it met, committed before any count
/// refers to it.
package actor FleetBackend: AggregateBackend {
    /// The metrics it counts.
    package nonisolated let table: MetricTable
    private let connection: PostgresConnection
    private let relayID: String
    private let epoch: Int
    private let logger: Logger
    /// `deliveries.delivery_ref` by tenant and delivery id; refs are committed before they are used.
    private var deliveryRefs: [CountDeltas.DeliveryKey: Int64] = [:]

    /// The counts of the relay `relayID` (of its data directory's epoch `epoch`) on `connection`.
    package init(connection: PostgresConnection, relayID: String, epoch: UInt32, table: MetricTable = .standard, logger: Logger) {
        self.connection = connection
        self.relayID = relayID
        self.epoch = Int(epoch)
        self.table = table
        self.logger = logger
    }

    /// The names of its migrations, in order (``FleetSchema/migrationNames(_:)``).
    package nonisolated var migrationNames: [String] { FleetSchema.migrationNames(table) }

    /// Brings the database to the schema and the columns of ``table`` (``FleetSchema``).
    package func migrate() async throws(FleetError) {
        do {
            try await FleetSchema.migrate(connection, table: table, logger: logger)
        } catch {
            throw FleetError.describe(error)
        }
    }

    /// Takes `registrations` out of this relay's counts (``FleetErasure``).
    package func uncount(_ registrations: [ErasedRegistration]) async throws(FleetError) -> UncountedRegistrations {
        do {
            return try await FleetErasure.uncount(registrations, relayID: relayID, table: table, connection: connection, logger: logger)
        } catch {
            throw FleetError.describe(error)
        }
    }

    /// One transaction: this relay's position moves from `start` to `end` with the counts of
    /// `deltas` (the fleet keeps no per-origin rows).
    package func apply(_ deltas: CountDeltas, from start: UInt64, to end: UInt64) async throws(FleetError) {
        do {
            try await count(deltas, from: start, to: end)
        } catch {
            throw FleetError.describe(error)
        }
    }

    private func count(_ deltas: CountDeltas, from start: UInt64, to end: UInt64) async throws {
        try await ensureDeliveryRefs(deltas.deliveries.map(\.key))
        var references: [Int64] = []
        for delivery in deltas.deliveries {
            guard let reference = deliveryRefs[delivery.key] else {
                throw FleetError.database(
                    "deliveries has no row for \(delivery.deliveryId) of tenant \(TenantName.displayName(stored: delivery.tenant)) after inserting it; nothing of this batch was counted"
                )
            }
            references.append(reference)
        }
        let relayID = self.relayID
        let epoch = self.epoch
        let logger = self.logger
        try await connection.withTransaction(logger: logger) { connection in
            // First, so a second aggregator of this relay waits here and then finds the position moved.
            var moved: Int64?
            for try await (next) in try await connection.query(
                """
                UPDATE relay_positions SET next_sequence = \(Int64(end)), events = events + \(Int64(deltas.events)), updated_at = now()
                WHERE relay_id = \(relayID)::uuid AND epoch = \(epoch) AND next_sequence = \(Int64(start)) RETURNING next_sequence
                """, logger: logger
            ).decode(Int64.self) {
                moved = next
            }
            guard moved != nil else {
                var found: Int64 = -1
                for try await (next) in try await connection.query(
                    "SELECT next_sequence FROM relay_positions WHERE relay_id = \(relayID)::uuid", logger: logger
                ).decode(Int64.self) {
                    found = next
                }
                throw FleetError.positionMoved(expected: start, found: UInt64(max(found, 0)))
            }
            let uniques = try await FleetCounting.insertMessages(deltas, references: references, connection: connection, logger: logger)
            if !deltas.deliveries.isEmpty {
                try await FleetCounting.addDeliveryCounts(
                    deltas, references: references, uniques: uniques, relayID: relayID, connection: connection, logger: logger)
            }
            if !deltas.erasedSequences.isEmpty {
                // Erased registrations met: counted for nothing, and remembered so that an erasure
                // never takes them out of the counts again.
                try await connection.query(
                    """
                    INSERT INTO erased_registrations (relay_id, sequence)
                    SELECT \(relayID)::uuid, s FROM unnest(\(deltas.erasedSequences.map { Int64(bitPattern: $0) })::int8[]) AS t(s)
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            }
            if !deltas.registrations.isEmpty {
                try await FleetCounting.addRegistrationCounts(deltas, relayID: relayID, connection: connection, logger: logger)
            }
        }
    }

    /// Delivery refs for `keys` (a delivery is its tenant and its id), created in a transaction of
    /// their own (committed rows that no count refers to yet are harmless), so counting
    /// transactions lock only message keys and this relay's rows.
    ///
    /// Missing keys are inserted sorted by (tenant, delivery id), the order of the unique key, as
    /// every relay does: two relays adding the same new deliveries never wait for each other in a
    /// cycle.
    private func ensureDeliveryRefs(_ keys: [CountDeltas.DeliveryKey]) async throws {
        let missing = keys.filter { deliveryRefs[$0] == nil }.sorted()
        guard !missing.isEmpty else { return }
        let tenants = missing.map(\.tenant)
        let ids = missing.map(\.deliveryId)
        try await connection.query(
            """
            INSERT INTO deliveries (tenant, delivery_id) SELECT * FROM unnest(\(tenants)::text[], \(ids)::text[])
            ON CONFLICT (tenant, delivery_id) DO NOTHING
            """, logger: logger)
        for try await (reference, tenant, id) in try await connection.query(
            """
            SELECT d.delivery_ref, d.tenant, d.delivery_id
            FROM deliveries d JOIN unnest(\(tenants)::text[], \(ids)::text[]) AS k(tenant, delivery_id) USING (tenant, delivery_id)
            """, logger: logger
        ).decode((Int64, String, String).self) {
            deliveryRefs[CountDeltas.DeliveryKey(tenant: tenant, deliveryId: id)] = reference
        }
    }
}

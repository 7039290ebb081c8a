public import Logging
import PostgresNIO
public import RelayAggregates
public import RelayCore

/// Reads the fleet's counts: every relay's rows summed per delivery and per app, each of a tenant.
public struct FleetQueries: Sendable {
    private let location: PostgresLocation
    private let logger: Logger
    private let timeout: Duration
    private let table: MetricTable

    /// Queries `location` for the metrics of `metrics`, each report in a session of its own,
    /// giving up after `timeout`.
    public init(location: PostgresLocation, timeout: Duration = .seconds(10), metrics: MetricTable = .standard, logger: Logger) {
        self.location = location
        self.timeout = timeout
        self.table = metrics
        self.logger = logger
    }

    /// The fleet's report: the deliveries and registrations of the tenants `tenant` selects (each
    /// row naming its tenant, `default` for the default tenant), only deliveries with the id
    /// `deliveryId` when given (of every selected tenant; registrations are then left out), at
    /// most `limit` deliveries, most recently active first; and every relay's position.
    ///
    /// - Throws: ``FleetError``.
    public func report(tenant: TenantSelection = .all, deliveryId: String? = nil, limit: Int? = nil) async throws(FleetError) -> FleetReport {
        do {
            let logger = self.logger
            let table = self.table
            return try await location.connectedSession(timeout: timeout, logger: logger) { connection, watch in
                watch.begin()
                defer { watch.end() }
                return try await Self.read(connection, table: table, tenant: tenant.storedName, deliveryId: deliveryId, limit: limit, logger: logger)
            }
        } catch {
            throw FleetError.describe(error)
        }
    }

    /// `tenant`: the stored name (`""` for the default tenant), `nil` for every tenant.
    private static func read(
        _ connection: PostgresConnection, table: MetricTable, tenant: String?, deliveryId: String?, limit: Int?, logger: Logger
    ) async throws -> FleetReport {
        var deliveries: [DeliveryCounts] = []
        let limitValue = Int64(max(0, limit ?? Int(Int32.max)))
        let deliverySums = table.perDelivery.map { "sum(c.\($0.column))::int8, " }.joined()
        let rows = try await connection.query(
            """
            SELECT d.tenant, d.delivery_id, \(unescaped: deliverySums)min(c.first_event_ns), max(c.last_event_ns)
            FROM delivery_counts c JOIN deliveries d USING (delivery_ref)
            WHERE (\(tenant)::text IS NULL OR d.tenant = \(tenant)::text) AND (\(deliveryId)::text IS NULL OR d.delivery_id = \(deliveryId)::text)
            GROUP BY d.tenant, d.delivery_id ORDER BY max(c.last_event_ns) DESC, d.tenant, d.delivery_id LIMIT \(limitValue)
            """, logger: logger)
        for try await row in rows {
            let cells = row.makeRandomAccess()
            let metrics = table.perDelivery
            var values: [String: Int64] = [:]
            for (index, metric) in metrics.enumerated() { values[metric.name] = try cells[2 + index].decode(Int64.self) }
            deliveries.append(
                DeliveryCounts(
                    tenant: TenantName.displayName(stored: try cells[0].decode(String.self)), deliveryId: try cells[1].decode(String.self),
                    values: values,
                    firstEvent: EventTime(nanosecondsSinceEpoch: try cells[2 + metrics.count].decode(Int64.self), fractionDigits: 3),
                    lastEvent: EventTime(nanosecondsSinceEpoch: try cells[3 + metrics.count].decode(Int64.self), fractionDigits: 3)))
        }
        var registrations: [RegistrationCounts] = []
        if deliveryId == nil {
            let appSums = table.perApp.map { "sum(\($0.column))::int8, " }.joined()
            let rows = try await connection.query(
                """
                SELECT tenant, integration_key, platform, \(unescaped: appSums)min(first_event_ns), max(last_event_ns)
                FROM registration_counts WHERE \(tenant)::text IS NULL OR tenant = \(tenant)::text
                GROUP BY tenant, integration_key, platform ORDER BY max(last_event_ns) DESC, tenant, integration_key, platform
                """, logger: logger)
            for try await row in rows {
                let cells = row.makeRandomAccess()
                let metrics = table.perApp
                var values: [String: Int64] = [:]
                for (index, metric) in metrics.enumerated() { values[metric.name] = try cells[3 + index].decode(Int64.self) }
                registrations.append(
                    RegistrationCounts(
                        tenant: TenantName.displayName(stored: try cells[0].decode(String.self)), integrationKey: try cells[1].decode(String.self),
                        platform: Platform(rawValue: try cells[2].decode(String.self)) ?? .ios, values: values,
                        firstEvent: EventTime(nanosecondsSinceEpoch: try cells[3 + metrics.count].decode(Int64.self), fractionDigits: 3),
                        lastEvent: EventTime(nanosecondsSinceEpoch: try cells[4 + metrics.count].decode(Int64.self), fractionDigits: 3)))
            }
        }
        var relays: [FleetReport.CountedRelay] = []
        let positions = try await connection.query(
            """
            SELECT relay_id::text, epoch, next_sequence, events, (extract(epoch FROM updated_at) * 1000)::int8
            FROM relay_positions ORDER BY updated_at DESC, relay_id
            """, logger: logger)
        for try await (relayID, epoch, next, events, milliseconds) in positions.decode((String, Int, Int64, Int64, Int64).self) {
            relays.append(
                FleetReport.CountedRelay(
                    relayId: relayID, epoch: UInt32(clamping: epoch), nextSequence: UInt64(max(next, 0)), events: events,
                    updatedAt: EventTime(nanosecondsSinceEpoch: milliseconds * 1_000_000, fractionDigits: 3)))
        }
        return FleetReport(deliveries: deliveries, registrations: registrations, relays: relays)
    }
}

import Logging
import PostgresNIO
import RelayAggregates

/// The statements of one counting transaction of ``FleetBackend``, their columns from the
/// ``MetricTable`` of the ``CountDeltas`` they apply.
enum FleetCounting {
    /// Inserts the sightings of `deltas` into the tables of distinct messages; returns the uniques
    /// each delivery gains (by delivery index, one per set: what ``CountDeltas/uniques(new:)``
    /// makes of the new sightings).
    ///
    /// The database counts the new sightings of each delivery's set itself and answers a row per
    /// set, not a row per new message: with ids mostly new, a row per message was most of this
    /// relay's CPU (each one framed, decoded and handed over by the client library).
    static func insertMessages(_ deltas: CountDeltas, references: [Int64], connection: PostgresConnection, logger: Logger) async throws
        -> [[Int64]]
    {
        let deliveryIndex = Dictionary(references.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        var uniques = deltas.uniques(new: [])
        func recordNew(_ deliveryAction: Int64, _ count: Int64) {
            let (reference, set) = MessageSetKey.parts(of: deliveryAction)
            if let delivery = deliveryIndex[reference] { uniques[delivery][set] += count }
        }
        func deliveryActions(_ sightings: [CountDeltas.MessageSighting]) -> [Int64] {
            sightings.map { CountDeltas.deliveryAction(reference: references[$0.delivery], action: $0.action) }
        }
        // Numeric ids and UUIDs have a table each.
        var (integers, integerKeys, uuids, uuidKeys) = ([CountDeltas.MessageSighting](), [Int64](), [CountDeltas.MessageSighting](), [String]())
        for sighting in deltas.messages {
            switch sighting.key {
            case .integer(let value):
                integers.append(sighting)
                integerKeys.append(value)
            case .uuid(let text):
                uuids.append(sighting)
                uuidKeys.append(text)
            }
        }
        // `RETURNING delivery_action` names the sightings that were new; grouped, how many each
        // delivery's set gained.
        if !integers.isEmpty {
            for try await (deliveryAction, count) in try await connection.query(
                """
                WITH new AS (
                    INSERT INTO delivery_messages (delivery_action, message_key) SELECT * FROM unnest(\(Int8ArrayBind(deliveryActions(integers)))::int8[], \(Int8ArrayBind(integerKeys))::int8[])
                    ON CONFLICT DO NOTHING RETURNING delivery_action
                )
                SELECT delivery_action, count(*) FROM new GROUP BY delivery_action
                """, logger: logger
            ).decode((Int64, Int64).self) {
                recordNew(deliveryAction, count)
            }
        }
        if !uuids.isEmpty {
            for try await (deliveryAction, count) in try await connection.query(
                """
                WITH new AS (
                    INSERT INTO delivery_message_uuids (delivery_action, message_uuid) SELECT * FROM unnest(\(Int8ArrayBind(deliveryActions(uuids)))::int8[], \(uuidKeys)::uuid[])
                    ON CONFLICT DO NOTHING RETURNING delivery_action
                )
                SELECT delivery_action, count(*) FROM new GROUP BY delivery_action
                """, logger: logger
            ).decode((Int64, Int64).self) {
                recordNew(deliveryAction, count)
            }
        }
        return uniques
    }

    /// Adds each delivery's values (totals, and `uniques` for its sets) to this relay's rows of
    /// `delivery_counts`.
    static func addDeliveryCounts(
        _ deltas: CountDeltas, references: [Int64], uniques: [[Int64]], relayID: String, connection: PostgresConnection, logger: Logger
    ) async throws {
        let columns = deltas.table.perDelivery.map(\.column)
        let rows = deltas.deliveries.indices.map { deltas.deliveryValues($0, uniques: uniques[$0]) }
        var binds = PostgresBindings()
        binds.append(relayID)
        binds.append(references)
        for column in columns.indices { binds.append(rows.map { $0[column] }) }
        binds.append(deltas.deliveries.map(\.first))
        binds.append(deltas.deliveries.map(\.last))
        let values = columns.indices.map { "v\($0)" }
        let arrays = (0..<(columns.count + 3)).map { "$\($0 + 2)::int8[]" }
        let sql = """
            INSERT INTO delivery_counts (delivery_ref, relay_id, \(columns.map { "\($0), " }.joined())first_event_ns, last_event_ns)
            SELECT r, $1::uuid, \(values.map { "\($0), " }.joined())f, l
            FROM unnest(\(arrays.joined(separator: ", "))) AS t(r, \(values.map { "\($0), " }.joined())f, l)
            ON CONFLICT (delivery_ref, relay_id) DO UPDATE SET
            \(columns.map { "    \($0) = delivery_counts.\($0) + excluded.\($0),\n" }.joined())    first_event_ns = least(delivery_counts.first_event_ns, excluded.first_event_ns),
                last_event_ns = greatest(delivery_counts.last_event_ns, excluded.last_event_ns)
            """
        try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
    }

    /// Inserts the tokens of `deltas` (the new ones are distinct tokens) and adds each app's values
    /// to this relay's rows of `registration_counts`.
    static func addRegistrationCounts(_ deltas: CountDeltas, relayID: String, connection: PostgresConnection, logger: Logger) async throws {
        var distinct = deltas.distinctTokens(newTokenApps: [])
        if !deltas.tokens.isEmpty {
            let apps = deltas.tokens.map { deltas.registrations[$0.app].app }
            let appIndex = Dictionary(deltas.registrations.enumerated().map { ($1.app, $0) }, uniquingKeysWith: { first, _ in first })
            // In the primary key's order, (tenant, key, platform, token), as every relay inserts
            // them (CountDeltas sorts them): two relays never wait for each other in a cycle. The
            // new ones are counted per app in the database, which answers a row per app.
            for try await (tenant, key, platform, count) in try await connection.query(
                """
                WITH new AS (
                    INSERT INTO registration_tokens (tenant, integration_key, platform, registration_token)
                    SELECT * FROM unnest(\(apps.map(\.tenant))::text[], \(apps.map(\.integrationKey))::text[], \(apps.map(\.platform))::text[],
                                         \(deltas.tokens.map(\.token))::text[])
                    ON CONFLICT DO NOTHING RETURNING tenant, integration_key, platform
                )
                SELECT tenant, integration_key, platform, count(*) FROM new GROUP BY tenant, integration_key, platform
                """, logger: logger
            ).decode((String, String, String, Int64).self) {
                if let app = appIndex[CountDeltas.App(tenant: tenant, integrationKey: key, platform: platform)] { distinct[app] += count }
            }
        }
        let apps = deltas.registrations.map(\.app)
        let columns = deltas.table.perApp.map(\.column)
        let rows = deltas.registrations.indices.map { deltas.appValues($0, distinctTokens: distinct[$0]) }
        var binds = PostgresBindings()
        binds.append(relayID)
        binds.append(apps.map(\.tenant))
        binds.append(apps.map(\.integrationKey))
        binds.append(apps.map(\.platform))
        for column in columns.indices { binds.append(rows.map { $0[column] }) }
        binds.append(deltas.registrations.map(\.first))
        binds.append(deltas.registrations.map(\.last))
        let values = columns.indices.map { "v\($0)" }
        let arrays = ["$2::text[]", "$3::text[]", "$4::text[]"] + (0..<(columns.count + 2)).map { "$\($0 + 5)::int8[]" }
        let sql = """
            INSERT INTO registration_counts (tenant, integration_key, platform, relay_id, \(columns.map { "\($0), " }.joined())first_event_ns, last_event_ns)
            SELECT tn, k, p, $1::uuid, \(values.map { "\($0), " }.joined())f, l
            FROM unnest(\(arrays.joined(separator: ", "))) AS t(tn, k, p, \(values.map { "\($0), " }.joined())f, l)
            ON CONFLICT (tenant, integration_key, platform, relay_id) DO UPDATE SET
            \(columns.map { "    \($0) = registration_counts.\($0) + excluded.\($0),\n" }.joined())    first_event_ns = least(registration_counts.first_event_ns, excluded.first_event_ns),
                last_event_ns = greatest(registration_counts.last_event_ns, excluded.last_event_ns)
            """
        try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
    }
}

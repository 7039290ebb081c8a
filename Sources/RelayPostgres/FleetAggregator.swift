public import Logging
public import PostgresNIO
import RelayAggregator
import RelayCore
public import RelayIO
public import RelayLog

/// Counts this relay's log into the fleet's PostgreSQL database, exactly once: every transaction
/// holds the counts of a batch **and** moves this relay's row of `relay_positions` past it, so a
/// crash, a kill or a database restart at any point neither loses nor double-counts an event.
///
/// Counts are kept per relay (`delivery_counts` and `registration_counts` have a row per relay),
/// so relays bumping one delivery at the same moment never wait for each other's rows. Unique
/// counts are fleet-wide: a message's first sighting anywhere in the fleet inserts it into
/// `delivery_messages`, and only the relay whose insert it was counts it as unique.
///
/// Everything is counted per tenant (schema version 2): a delivery is its tenant and its id, so the
/// same delivery id under two tenants is two deliveries with a `delivery_ref` each; an app is its
/// tenant, integration key and platform, and a token is distinct per app.
///
/// It also keeps the log cursor ``cursorName`` (after the commits, so it may lag), which keeps the
/// log from deleting segments PostgreSQL has not counted yet: a log it counts with that cursor is
/// opened with ``consumer`` among its consumers.
public actor FleetAggregator {
    /// The log cursor the fleet aggregator keeps.
    public static let cursorName = "aggregator-postgres"
    /// The fleet aggregator as a consumer of the log: its exact position is in PostgreSQL.
    public static let consumer = LogConsumerDeclaration.ownStore(cursorName)

    private let connection: PostgresConnection
    private let watch: OperationWatch
    private let log: WriteAheadLog
    private let relayID: String
    private let epoch: UInt32
    private let readAhead: BlockingExecutor
    /// Where the next catch-up reads from (``LogCatchUp`` hands it back after each).
    private var reader: LogReader
    private var position: UInt64
    private let batchSize: Int
    /// `nil` when this aggregator does not keep a log cursor.
    private let cursor: RetentionCursor?
    private let logger: Logger
    /// `deliveries.delivery_ref` by tenant and delivery id; refs are committed before they are used.
    private var deliveryRefs: [CountDeltas.DeliveryKey: Int64] = [:]
    /// A catch-up and an erasure's change (``applyErasure(_:whileQuiescent:)``) take turns, since
    /// the actor lets one run while the other awaits.
    private let turns = TurnQueue()

    /// Takes the registrations of `targets` out of the fleet's counts of this relay (see
    /// ``FleetErasure``), between two of this aggregator's transactions: every batch read before
    /// they were masked is committed, so the position says which were counted.
    public func applyErasure(_ targets: [ErasurePlan.Target]) async throws -> FleetErasure.Result {
        await turns.take()
        defer { turns.end() }
        watch.begin()
        defer { watch.end() }
        return try await FleetErasure.apply(targets, relayID: relayID, connection: connection, logger: logger)
    }

    /// Migrates the schema if needed, finds (or creates) this relay's position, and positions the
    /// aggregator after the last event PostgreSQL has counted.
    ///
    /// A data directory restored from a copy (a newer epoch, see `docs/relay-identity.md`) counts
    /// its new epoch from where it starts; an older copy than the database knows is refused.
    ///
    /// - Throws: ``FleetError``.
    public init(
        connection: PostgresConnection, watch: OperationWatch = OperationWatch(), log: WriteAheadLog, batchSize: Int = 20_000,
        movesLogCursor: Bool = true,
        priority: BlockingExecutor.Priority = .normal, logger: Logger
    ) async throws(FleetError) {
        self.connection = connection
        self.watch = watch
        self.log = log
        self.batchSize = batchSize
        self.cursor = movesLogCursor ? RetentionCursor(name: Self.cursorName, log: log, logger: logger) : nil
        self.logger = logger
        let identity = log.identity
        relayID = identity.relayID
        epoch = identity.epoch.number
        readAhead = BlockingExecutor(name: "aggregator-postgres-read", priority: priority)
        let oldest = await log.oldestSequence
        let start: UInt64
        watch.begin()
        defer { watch.end() }
        do {
            try await FleetSchema.migrate(connection, logger: logger)
            start = try await Self.establishPosition(connection: connection, identity: identity, oldest: oldest, logger: logger)
        } catch {
            throw FleetError.describe(error)
        }
        guard start >= oldest else { throw .logTrimmed(needed: start, oldest: oldest) }
        position = start
        reader = log.reader(from: start)
        if movesLogCursor {
            do {
                _ = try await log.startPosition(of: Self.cursorName)
            } catch {
                throw .log(error)
            }
        }
    }

    /// This relay's row of `relay_positions`, created at the log's oldest event the first time; a
    /// newer epoch of the directory starts counting where it diverged from the counted timeline.
    private static func establishPosition(connection: PostgresConnection, identity: RelayIdentity, oldest: UInt64, logger: Logger) async throws
        -> UInt64
    {
        let relayID = identity.relayID
        let current = Int(identity.epoch.number)
        return try await connection.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO relay_positions (relay_id, epoch, next_sequence, events, updated_at)
                VALUES (\(relayID)::uuid, \(current), \(Int64(oldest)), 0, now()) ON CONFLICT (relay_id) DO NOTHING
                """, logger: logger)
            var stored: (epoch: Int, next: Int64) = (current, Int64(oldest))
            for try await (storedEpoch, next) in try await connection.query(
                "SELECT epoch, next_sequence FROM relay_positions WHERE relay_id = \(relayID)::uuid FOR UPDATE", logger: logger
            ).decode((Int, Int64).self) {
                stored = (storedEpoch, next)
            }
            if stored.epoch > current {
                throw FleetError.staleCopy(relayID: relayID, databaseEpoch: UInt32(stored.epoch), directoryEpoch: UInt32(current))
            }
            guard stored.epoch < current else { return UInt64(max(stored.next, 1)) }
            // The directory was restored from a copy: its events from the first newer epoch on are
            // new; those before were counted (if PostgreSQL got that far).
            let diverged = identity.epochs.first { Int($0.number) == stored.epoch + 1 }?.firstSequence ?? UInt64(stored.next)
            let next = min(UInt64(max(stored.next, 1)), diverged)
            try await connection.query(
                "UPDATE relay_positions SET epoch = \(current), next_sequence = \(Int64(next)), updated_at = now() WHERE relay_id = \(relayID)::uuid",
                logger: logger)
            logger.notice(
                "this data directory is a restored copy: counting its new epoch into PostgreSQL from where it diverged",
                metadata: ["relay-id": "\(relayID)", "epoch": "\(current)", "from": "\(next)"])
            return next
        }
    }

    /// How long one transaction of `batchSize` events may go unanswered before its session gives
    /// up on the connection: 5 s, and 1 s more per 4,000 events beyond 20,000 (a transaction of
    /// 20,000 events takes well under a second here).
    public static func operationTimeout(batchSize: Int) -> Duration { .seconds(max(5, batchSize / 4000)) }

    /// The next sequence number to count: every event below it is in PostgreSQL.
    public var nextSequence: UInt64 { position }

    /// Counts every event that is durable in the log now, then returns.
    ///
    /// - Throws: ``FleetError``; what was committed before the error stays counted, and the next
    ///   call goes on from there.
    public func catchUp(progress: (@Sendable (CatchUpProgress) -> Void)? = nil) async throws(FleetError) -> CatchUpSummary {
        await turns.take()
        defer { turns.end() }
        let outcome = await LogCatchUp.run(
            log: log, reader: reader, from: position, batchSize: batchSize, readAhead: readAhead, cursor: cursor, logger: logger,
            progress: progress
        ) { (events, from, to) throws(FleetError) in
            do {
                try await apply(events, from: from, to: to)
            } catch {
                throw FleetError.describe(error)
            }
            position = to
        }
        reader = outcome.reader
        return try outcome.summary(orThrow: { .log($0) })
    }

    /// Counts events as they become durable, until the task is cancelled or the log closes.
    public func run(afterEachCatchUp: @Sendable (CatchUpSummary) async -> Void = { _ in }) async throws(FleetError) {
        while !Task.isCancelled {
            let summary = try await catchUp()
            await afterEachCatchUp(summary)
            let durable = await log.waitForDurable(beyond: position)
            if durable <= position { break }
            // As the SQLite aggregator does: fewer, larger transactions under many small commits.
            try? await Task.sleep(for: Aggregator.followPause)
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

    /// One transaction: this relay's position moves from `start` to `end` with the counts of
    /// `events` (``CountDeltas``; the fleet keeps no per-origin rows).
    private func apply(_ events: ArraySlice<SequencedEvent>, from start: UInt64, to end: UInt64) async throws {
        watch.begin()
        defer { watch.end() }
        let deltas = CountDeltas(events)
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
        let deliveryIndex = Dictionary(references.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let relayID = self.relayID
        let epoch = Int(self.epoch)
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
            // `RETURNING delivery_action` names the sightings that were new: their delivery and action.
            var newMessages: [(delivery: Int, action: Int)] = []
            func recordNew(_ deliveryAction: Int64) {
                if let delivery = deliveryIndex[deliveryAction >> 2] { newMessages.append((delivery, Int(deliveryAction & 3))) }
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
            if !integers.isEmpty {
                for try await (deliveryAction) in try await connection.query(
                    """
                    INSERT INTO delivery_messages (delivery_action, message_key) SELECT * FROM unnest(\(deliveryActions(integers))::int8[], \(integerKeys)::int8[])
                    ON CONFLICT DO NOTHING RETURNING delivery_action
                    """, logger: logger
                ).decode(Int64.self) {
                    recordNew(deliveryAction)
                }
            }
            if !uuids.isEmpty {
                for try await (deliveryAction) in try await connection.query(
                    """
                    INSERT INTO delivery_message_uuids (delivery_action, message_uuid) SELECT * FROM unnest(\(deliveryActions(uuids))::int8[], \(uuidKeys)::uuid[])
                    ON CONFLICT DO NOTHING RETURNING delivery_action
                    """, logger: logger
                ).decode(Int64.self) {
                    recordNew(deliveryAction)
                }
            }
            if !deltas.deliveries.isEmpty {
                let uniques = deltas.uniques(new: newMessages)
                func column(_ value: (Int) -> Int64) -> [Int64] { deltas.deliveries.indices.map(value) }
                let impressions = column { deltas.deliveries[$0].totals[0] }
                let opens = column { deltas.deliveries[$0].totals[1] }
                let clicks = column { deltas.deliveries[$0].totals[2] }
                let uniqueImpressions = column { uniques[$0][0] }
                let uniqueOpens = column { uniques[$0][1] }
                let uniqueClicks = column { uniques[$0][2] }
                let firsts = column { deltas.deliveries[$0].first }
                let lasts = column { deltas.deliveries[$0].last }
                try await connection.query(
                    """
                    INSERT INTO delivery_counts (delivery_ref, relay_id, impressions, opens, clicks, unique_impressions, unique_opens, unique_clicks, first_event_ns, last_event_ns)
                    SELECT r, \(relayID)::uuid, i, o, c, ui, uo, uc, f, l
                    FROM unnest(\(references)::int8[], \(impressions)::int8[], \(opens)::int8[], \(clicks)::int8[], \(uniqueImpressions)::int8[],
                                \(uniqueOpens)::int8[], \(uniqueClicks)::int8[], \(firsts)::int8[], \(lasts)::int8[]) AS t(r, i, o, c, ui, uo, uc, f, l)
                    ON CONFLICT (delivery_ref, relay_id) DO UPDATE SET
                        impressions = delivery_counts.impressions + excluded.impressions,
                        opens = delivery_counts.opens + excluded.opens,
                        clicks = delivery_counts.clicks + excluded.clicks,
                        unique_impressions = delivery_counts.unique_impressions + excluded.unique_impressions,
                        unique_opens = delivery_counts.unique_opens + excluded.unique_opens,
                        unique_clicks = delivery_counts.unique_clicks + excluded.unique_clicks,
                        first_event_ns = least(delivery_counts.first_event_ns, excluded.first_event_ns),
                        last_event_ns = greatest(delivery_counts.last_event_ns, excluded.last_event_ns)
                    """, logger: logger)
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
                var newTokenApps: [Int] = []
                if !deltas.tokens.isEmpty {
                    let apps = deltas.tokens.map { deltas.registrations[$0.app].app }
                    let appIndex = Dictionary(deltas.registrations.enumerated().map { ($1.app, $0) }, uniquingKeysWith: { first, _ in first })
                    // In the primary key's order, (tenant, key, platform, token), as every relay inserts
                    // them (CountDeltas sorts them): two relays never wait for each other in a cycle.
                    for try await (tenant, key, platform) in try await connection.query(
                        """
                        INSERT INTO registration_tokens (tenant, integration_key, platform, registration_token)
                        SELECT * FROM unnest(\(apps.map(\.tenant))::text[], \(apps.map(\.integrationKey))::text[], \(apps.map(\.platform))::text[],
                                             \(deltas.tokens.map(\.token))::text[])
                        ON CONFLICT DO NOTHING RETURNING tenant, integration_key, platform
                        """, logger: logger
                    ).decode((String, String, String).self) {
                        if let app = appIndex[CountDeltas.App(tenant: tenant, integrationKey: key, platform: platform)] { newTokenApps.append(app) }
                    }
                }
                let distinct = deltas.distinctTokens(newTokenApps: newTokenApps)
                let apps = deltas.registrations.map(\.app)
                try await connection.query(
                    """
                    INSERT INTO registration_counts (tenant, integration_key, platform, relay_id, registrations, distinct_tokens, first_event_ns, last_event_ns)
                    SELECT tn, k, p, \(relayID)::uuid, n, d, f, l
                    FROM unnest(\(apps.map(\.tenant))::text[], \(apps.map(\.integrationKey))::text[], \(apps.map(\.platform))::text[],
                                \(deltas.registrations.map(\.registrations))::int8[], \(distinct)::int8[], \(deltas.registrations.map(\.first))::int8[],
                                \(deltas.registrations.map(\.last))::int8[]) AS t(tn, k, p, n, d, f, l)
                    ON CONFLICT (tenant, integration_key, platform, relay_id) DO UPDATE SET
                        registrations = registration_counts.registrations + excluded.registrations,
                        distinct_tokens = registration_counts.distinct_tokens + excluded.distinct_tokens,
                        first_event_ns = least(registration_counts.first_event_ns, excluded.first_event_ns),
                        last_event_ns = greatest(registration_counts.last_event_ns, excluded.last_event_ns)
                    """, logger: logger)
            }
        }
    }

    /// Saves the log cursor.
    public func close() async {
        await cursor?.commit(to: position, force: true)
    }
}

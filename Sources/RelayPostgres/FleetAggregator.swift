public import Logging
public import PostgresNIO
public import RelayAggregates
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
    private var reader: LogFollower.Steps?
    private var position: UInt64
    private let batchSize: Int
    /// `nil` when this aggregator does not keep a log cursor.
    private let cursor: RetentionCursor?
    private let logger: Logger
    /// The counts in PostgreSQL: what a batch is applied to.
    private let backend: FleetBackend
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
        return FleetErasure.Result(try await backend.uncount(targets.map(ErasedRegistration.init)))
    }

    /// Migrates the schema if needed, finds (or creates) this relay's position, and positions the
    /// aggregator after the last event PostgreSQL has counted.
    ///
    /// A data directory restored from a copy (a newer epoch, see `docs/relay-identity.md`) counts
    /// its new epoch from where it starts; an older copy than the database knows is refused.
    ///
    /// `metrics` says what it counts (``MetricTable``): a metric the database has no column for yet
    /// gets one, by migration.
    ///
    /// - Throws: ``FleetError``.
    public init(
        connection: PostgresConnection, watch: OperationWatch = OperationWatch(), log: WriteAheadLog, batchSize: Int = 20_000,
        movesLogCursor: Bool = true,
        priority: BlockingExecutor.Priority = .normal, metrics: MetricTable = .standard, logger: Logger
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
        let backend = FleetBackend(connection: connection, relayID: identity.relayID, epoch: identity.epoch.number, table: metrics, logger: logger)
        self.backend = backend
        let oldest = await log.oldestSequence
        let start: UInt64
        watch.begin()
        defer { watch.end() }
        do {
            try await backend.migrate()
            start = try await Self.establishPosition(connection: connection, identity: identity, oldest: oldest, logger: logger)
        } catch {
            throw FleetError.describe(error)
        }
        guard start >= oldest else { throw .logTrimmed(needed: start, oldest: oldest) }
        position = start
        reader = nil
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
            progress: progress,
            // Reduced to counts on the reading thread while PostgreSQL applies the batch before,
            // as SQLite's aggregator does: the events are let go before they wait, and this actor
            // only sends.
            prepare: { [table = backend.table] in CountDeltas($0, table: table, tokenDigest: TokenDigest.hex) },
            apply: { (deltas, from, to) throws(FleetError) in
                do {
                    try await apply(deltas, from: from, to: to)
                } catch {
                    throw FleetError.describe(error)
                }
                position = to
            })
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
            try? await Task.sleep(for: Self.followPause)
        }
    }

    /// One transaction: this relay's position moves from `start` to `end` with `deltas`, the
    /// counts of its events (applied by ``FleetBackend``).
    private func apply(_ deltas: CountDeltas, from start: UInt64, to end: UInt64) async throws {
        watch.begin()
        defer { watch.end() }
        try await backend.apply(deltas, from: start, to: end)
    }

    /// How long it waits after the log's end moves before counting again, as SQLite's
    /// aggregator does (its `followPause`): at most 20 transactions a second, each larger.
    static let followPause = Duration.milliseconds(50)

    /// Saves the log cursor.
    public func close() async {
        await cursor?.commit(to: position, force: true)
    }
}

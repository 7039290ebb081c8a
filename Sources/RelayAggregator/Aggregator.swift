public import Logging
public import RelayAggregates
import RelayCore
public import RelayIO
public import RelayLog
import Synchronization

/// Keeps exact impressions / opens / clicks per delivery, and registrations per app, in
/// `<data-dir>/aggregates.sqlite`, by consuming the write-ahead log.
///
/// Exactly once: the position in the log is stored in the same SQLite transaction as the counts
/// it covers, so a crash at any point neither loses nor double-counts an event. The aggregator
/// also keeps the log cursor named ``cursorName`` (committed after the counts, so it may lag),
/// which stops the log from deleting segments it has not consumed: a log it counts with that
/// cursor is opened with ``consumer`` among its consumers.
public actor Aggregator: BlockingActor {
    /// The log cursor the aggregator keeps.
    public static let cursorName = "aggregator"
    /// The aggregator as a consumer of the log: its exact position is in the database.
    public static let consumer = LogConsumerDeclaration.ownStore(cursorName)

    /// The aggregates database of a data directory.
    public static func databasePath(dataDirectory: String) -> String { "\(dataDirectory)/aggregates.sqlite" }

    /// The thread the aggregator (and so every SQLite call of its store) runs on.
    public nonisolated let executor: BlockingExecutor
    /// The thread that decodes the next batch from the log while SQLite counts this one.
    private let readAhead: BlockingExecutor
    private let log: WriteAheadLog
    let store: AggregateStore
    /// A catch-up and an erasure's change (``applyErasure(_:whileQuiescent:)``) take turns, since
    /// the actor lets one run while the other awaits.
    let turns = TurnQueue()
    /// Where the next catch-up reads from (``LogCatchUp`` hands it back after each).
    private var reader: LogFollower.Steps?
    private var position: UInt64 {
        didSet { committedPosition.store(position, ordering: .relaxed) }
    }
    /// ``position`` as of its last commit, readable without waiting for a transaction under way.
    private nonisolated let committedPosition = Atomic<UInt64>(1)
    private let batchSize: Int
    private let logger: Logger
    /// `nil` when this aggregator does not keep a log cursor.
    private let cursor: RetentionCursor?
    /// Segments read where the log no longer has them (a rebuild `--from-archive`).
    private let archiveDirectory: String?

    /// SQLite's page cache unless told otherwise: 128 MiB, which holds the distinct-message index
    /// of a million random message ids, so that a batch `aggregate` inserts without reading pages
    /// back.
    public static let defaultPageCacheBytes = 128 << 20

    /// Opens the aggregates of `dataDirectory` and positions the aggregator after the last counted event.
    ///
    /// A missing database is created and built from the log, provided the log still starts at
    /// sequence 1 (or `allowPartial`).
    ///
    /// With `movesLogCursor` false the aggregator counts without moving its log cursor, so it never
    /// lets segments be deleted: `stats` catches up that way, since a consumer that has not run yet
    /// (the first `upload`) still needs them.
    /// - Throws: ``AggregatorError/unreadableDatabase(path:_:)`` for a damaged file,
    ///   ``AggregatorError/logTrimmed(path:needed:oldest:)`` when the log no longer holds events the
    ///   aggregates need, ``AggregatorError/log(_:)`` when `movesLogCursor` and the log was opened
    ///   without ``consumer``.
    ///
    /// `priority` schedules the aggregator's threads: `serve` counts at
    /// ``BlockingExecutor/Priority/background``, so counting never takes a core from request handling.
    ///
    /// `pageCacheBytes` bounds SQLite's page cache: large for a batch run (the distinct-message
    /// index of a million random message ids fits), small for a long-running server, whose memory
    /// it would otherwise fill.
    ///
    /// `metrics` says what it counts (``MetricTable``): a metric the database has no column for yet
    /// gets one when it opens.
    public init(
        log: WriteAheadLog, dataDirectory: String, batchSize: Int = 50_000, allowPartial: Bool = false, movesLogCursor: Bool = true,
        priority: BlockingExecutor.Priority = .normal, pageCacheBytes: Int = Aggregator.defaultPageCacheBytes, metrics: MetricTable = .standard,
        logger: Logger
    ) async throws(AggregatorError) {
        try await self.init(
            log: log, databasePath: Self.databasePath(dataDirectory: dataDirectory), batchSize: batchSize, allowPartial: allowPartial,
            keepsCursor: movesLogCursor, priority: priority, pageCacheBytes: pageCacheBytes, metrics: metrics, logger: logger
        )
    }

    private init(
        log: WriteAheadLog, databasePath: String, batchSize: Int, allowPartial: Bool, keepsCursor: Bool,
        priority: BlockingExecutor.Priority = .normal, pageCacheBytes: Int = Aggregator.defaultPageCacheBytes, metrics: MetricTable = .standard,
        archiveDirectory: String? = nil, oldestSequence: UInt64? = nil, logger: Logger
    ) async throws(AggregatorError) {
        let logOldest = await log.oldestSequence
        let oldest = oldestSequence ?? logOldest
        let executor = BlockingExecutor(name: "aggregator", priority: priority)
        let (store, state, existed) = try await executor.run {
            () throws(AggregatorError) -> (AggregateStore, AggregateStore.State, Bool) in
            let existed = PosixFileSystem().exists(databasePath)
            if !existed, oldest > 1, !allowPartial {
                throw .logTrimmed(path: databasePath, needed: 1, oldest: oldest)
            }
            let store = try AggregateStore(
                path: databasePath, firstSequence: oldest, table: metrics, pageCacheBytes: pageCacheBytes, logger: logger)
            let state = try store.state()
            if state.nextSequence < oldest, !allowPartial {
                store.close()
                throw .logTrimmed(path: databasePath, needed: state.nextSequence, oldest: oldest)
            }
            return (store, state, existed)
        }
        if !existed, keepsCursor {
            // On a new relay there is nothing to rebuild: the database is simply new.
            if await log.durableSequence > oldest {
                logger.notice("aggregates database missing; building it from the log", metadata: ["path": "\(databasePath)", "from": "\(oldest)"])
            } else {
                logger.info("aggregates database created", metadata: ["path": "\(databasePath)"])
            }
        }
        self.executor = executor
        self.readAhead = BlockingExecutor(name: "aggregator-read", priority: priority)
        self.log = log
        self.store = store
        self.position = max(state.nextSequence, 1)
        committedPosition.store(max(state.nextSequence, 1), ordering: .relaxed)
        self.archiveDirectory = archiveDirectory
        self.reader = nil
        self.batchSize = batchSize
        self.logger = logger
        self.cursor = keepsCursor ? RetentionCursor(name: Self.cursorName, log: log, logger: logger) : nil
        if keepsCursor {
            do {
                _ = try await log.startPosition(of: Self.cursorName)
            } catch {
                store.close()
                throw .log(error)
            }
        }
    }

    /// The next sequence number to count: every event below it is in the aggregates.
    public var nextSequence: UInt64 { position }

    /// ``nextSequence`` as of the last committed transaction, read without waiting for the actor
    /// (which a transaction under way holds): what `/metrics` reports the lag from, as of the scrape.
    public nonisolated var committedNextSequence: UInt64 { committedPosition.load(ordering: .relaxed) }

    /// Counts every event that is durable in the log now, then returns.
    public func catchUp(progress: (@Sendable (CatchUpProgress) -> Void)? = nil) async throws(AggregatorError) -> CatchUpSummary {
        await turns.take()
        defer { turns.end() }
        // Reading and reducing the next batch runs on the other core while SQLite counts this one.
        let outcome = await LogCatchUp.run(
            log: log, reader: reader, archiveDirectory: archiveDirectory, from: position, batchSize: batchSize, readAhead: readAhead,
            cursor: cursor, logger: logger, progress: progress,
            // Reduced to counts on the reading thread, so the events are let go before they wait
            // for SQLite, and this thread only writes.
            prepare: { [table = store.table] in CountDeltas($0, table: table) },
            apply: { (deltas, from, to) throws(AggregatorError) in
                try store.apply(deltas, from: from, to: to)
                position = to
            })
        reader = outcome.reader
        return try outcome.summary(orThrow: { .log($0) })
    }

    /// Counts events as they become durable, until the task is cancelled or the log closes.
    public func run() async throws(AggregatorError) {
        while !Task.isCancelled {
            let summary = try await catchUp()
            if summary.events > 0 {
                logger.debug("aggregated", metadata: ["events": "\(summary.events)", "position": "\(position)"])
            }
            let durable = await log.waitForDurable(beyond: position)
            if durable <= position { break }
            // Gathers more commits into the next SQLite transaction (see ``followPause``); a
            // cancellation ends the pause early and the loop.
            try? await Task.sleep(for: Self.followPause)
        }
    }

    /// How long ``run()`` waits after new events became durable before counting them.
    ///
    /// Under single tracking hits the log commits some 2,000 small groups a second; counting each
    /// as it comes costs a wake-up, a read and a SQLite transaction per commit, CPU the request
    /// path then lacks. Waiting 50 ms makes that at most 20 transactions a second, each larger,
    /// for counts that are at most 50 ms later.
    public static let followPause: Duration = .milliseconds(50)

    /// Closes the database.
    public func close() async {
        await cursor?.commit(to: position, force: true)
        store.close()
    }

    // MARK: Rebuild

    /// Drops the aggregates and recomputes them from the log: built in a side file, then swapped
    /// in with a rename, so a crash midway leaves the previous aggregates in place. A previous
    /// file that is not a readable database is kept in `<data-dir>/quarantine/`.
    ///
    /// Every file operation around the database (removing a leftover side file, the quarantine,
    /// the rename, the directory sync) goes through `fileSystem`, on a thread of its own.
    ///
    /// With an `archiveDirectory` (``SegmentArchive``), the archive's segments come first, and
    /// the log's carry on where they end: the archive must reach the log's first kept sequence.
    ///
    /// - Throws: ``AggregatorError/logTrimmed(path:needed:oldest:)`` when the log (with the
    ///   archive) no longer starts at sequence 1 and `allowPartial` is false;
    ///   ``AggregatorError/archiveGap(archive:archiveEnd:logStart:)`` when the archive does not
    ///   reach the log; ``AggregatorError/files(_:)`` when a file operation fails (the previous
    ///   aggregates, if any, are then still in place); ``AggregatorError/log(_:)`` when the log was
    ///   opened without ``consumer`` (checked first, so nothing is rebuilt for nothing).
    public static func rebuild(
        log: WriteAheadLog, dataDirectory: String, archiveDirectory: String? = nil, batchSize: Int = 50_000, allowPartial: Bool = false,
        fileSystem: any FileSystem = PosixFileSystem(), logger: Logger,
        progress: (@Sendable (CatchUpProgress) -> Void)? = nil
    ) async throws(AggregatorError) -> CatchUpSummary {
        let path = databasePath(dataDirectory: dataDirectory)
        do {
            _ = try await log.startPosition(of: cursorName)
        } catch {
            throw .log(error)
        }
        var oldest = await log.oldestSequence
        if let archiveDirectory {
            let logStart = oldest
            let archived = try await BlockingExecutor(name: "archive-extent").run { () throws(AggregatorError) -> LogExtent in
                do throws(LogError) {
                    return try LogExtent.read(walDirectory: archiveDirectory, fileSystem: fileSystem, keys: log.configuration.encryption)
                } catch { throw .log(error) }
            }
            if let first = archived.firstSequence, let last = archived.lastSequence {
                let durable = await log.durableSequence
                guard last + 1 >= logStart || durable <= logStart else {
                    throw .archiveGap(archive: archiveDirectory, archiveEnd: last, logStart: logStart)
                }
                oldest = min(oldest, first)
            }
        }
        if oldest > 1, !allowPartial { throw .logTrimmed(path: path, needed: 1, oldest: oldest) }
        let side = path + ".rebuild"
        let files = BlockingExecutor(name: "aggregate-files")
        // A side file left by an earlier rebuild that did not finish is of no use: start afresh.
        try await files.run { () throws(AggregatorError) in
            do throws(FileSystemError) {
                try removeIfPresent([side, side + "-wal", side + "-shm"], fileSystem)
            } catch {
                throw .files(error)
            }
        }
        let builder = try await Aggregator(
            log: log, databasePath: side, batchSize: batchSize, allowPartial: true, keepsCursor: false, archiveDirectory: archiveDirectory,
            oldestSequence: oldest, logger: logger)
        let summary = try await builder.catchUp(progress: progress)
        await builder.close()

        // The check's connection is closed before the files move under it.
        let previous = try? await AggregateQueries(path: path)
        await previous?.close()
        let previousIsReadable = previous != nil
        let quarantined = try await files.run { () throws(AggregatorError) -> String? in
            var kept: String?
            do throws(FileSystemError) {
                if fileSystem.exists(path), !previousIsReadable {
                    let quarantine = "\(dataDirectory)/quarantine"
                    try fileSystem.createDirectory(quarantine)
                    let name = "\(quarantine)/aggregates.sqlite.\(EventTime.now().rfc3339)"
                    try fileSystem.rename(path, to: name)
                    kept = name
                }
                // The previous database's journal must not be applied to the rebuilt one.
                try removeIfPresent([path + "-wal", path + "-shm"], fileSystem)
                try fileSystem.rename(side, to: path)
                try fileSystem.synchronizeDirectory(dataDirectory)
            } catch {
                throw .files(error)
            }
            return kept
        }
        if let quarantined {
            logger.warning("the previous aggregates file was not readable; kept it in quarantine", metadata: ["path": "\(quarantined)"])
        }
        do {
            try await log.commitCursor(cursorName, to: summary.endPosition)
        } catch {
            throw .log(error)
        }
        return summary
    }

    private static func removeIfPresent(_ paths: [String], _ fileSystem: any FileSystem) throws(FileSystemError) {
        for path in paths where fileSystem.exists(path) { try fileSystem.remove(path) }
    }
}

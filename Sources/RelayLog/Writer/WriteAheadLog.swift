public import Logging
import NIOConcurrencyHelpers
public import RelayCore
import RelayIO

/// The append-only, zlib-compressed, crash-safe write-ahead log in `<data-dir>/wal/`.
///
/// ``append(_:)`` returns only once the events are in a frame that was fdatasync'ed: that is what
/// "acknowledged" means everywhere in the relay. Appends that arrive while a commit is under way
/// are coalesced into the next frame and the next fdatasync (group commit), so many concurrent
/// small appends cost one disk sync. Pass events in batches: the cost per call is one actor hop,
/// whatever the batch size.
///
/// Opening recovers from any earlier stop on its own (see ``RecoveryReport``). Consumers are
/// declared when the log opens (``LogConsumerDeclaration``); each reads with a ``LogReader`` the
/// log makes (``reader(from:archiveDirectory:)``) up to ``durableSequence`` and keeps its place
/// with its named cursor; a segment may leave once every cursor has passed it, as
/// ``LogConfiguration/retention`` says.
public actor WriteAheadLog {
    /// Where the log's files are. Readers come from ``reader(from:archiveDirectory:)``, so no
    /// consumer builds one from the directory and file layer itself.
    nonisolated let walDirectory: String
    /// The configuration the log was opened with.
    public nonisolated let configuration: LogConfiguration
    /// What opening the log found and repaired.
    public nonisolated let recoveryReport: RecoveryReport
    /// The file layer in use.
    nonisolated let fileSystem: any FileSystem
    /// Decodes each frame once for all the readers the log makes, and reports their damage once.
    package nonisolated let sharedDecoder: SharedFrameDecoder
    /// The data directory's relay id and epochs, as opening the log found or made them.
    public nonisolated let identity: RelayIdentity
    /// The registrations being erased, which this log's readers hand out as erased entries
    /// (``ErasureMask``): those of unfinished erasures found on open, and those an erasure in this
    /// process adds before it rewrites a segment.
    public nonisolated let erasureMask: ErasureMask

    /// The segment writer while it is home; `nil` while a group commit or a removal has it on the
    /// I/O thread, and once the log is shut. Where it is and what may take it is ``machine``'s say.
    private var writer: SegmentWriter?
    /// The writer's decisions: appends taken or refused, commits and removals leaving, closing.
    private var machine: LogWriterStateMachine
    /// The task that commits queued appends, started at open and joined by ``close()``.
    private let flushLoop = LogFlushLoop()
    private var flushTask: Task<Void, Never>?
    private var nextSequence: UInt64
    /// The writer's figures as of its last return home. The writer changes only while it is away
    /// on the I/O thread (commits, deletions), so they are exact while it is home and the last
    /// known while it is away.
    private var writerFigures: SegmentWriter.Figures
    private var pending: [PendingAppend] = []
    /// Appends handed in by ``append(_:completion:)`` from outside the actor, in arrival order,
    /// until the flush loop takes them; `nil` once the log is closing.
    private nonisolated let submitted = NIOLockedValueBox<[PendingAppend]?>([])
    /// Callers of ``close()`` waiting for the writer to be idle.
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// Set once ``close()`` let the writer go for good.
    private var isClosedForGood = false
    /// Callers of ``sealActiveSegment()`` waiting for the writer to come home.
    private var sealWaiters: [CheckedContinuation<UInt64, Never>] = []
    private var durableWaiters: [Int: (beyond: UInt64, continuation: CheckedContinuation<UInt64, Never>)] = [:]
    private var nextWaiterID = 0
    private var cursorPositions: [String: UInt64]
    /// The consumers declared when the log opened, by name (tests declare more with ``registerCursor(_:initialPosition:)``).
    private var declaredConsumers: [String: LogConsumerDeclaration] = [:]
    private let cursors: CursorStore
    private let lock: (any FileHandle)?
    /// The thread that writes and syncs frames and deletes segments.
    private let io: BlockingExecutor
    /// The thread that writes cursors, so a cursor commit never waits behind a group commit.
    private let cursorIO: BlockingExecutor
    /// The thread that copies segments into the archive (`--archive-dir`), so that group commits
    /// go on meanwhile; started on first use.
    private var archiveThread: BlockingExecutor?
    private var archiveIO: BlockingExecutor {
        if let archiveThread { return archiveThread }
        let started = BlockingExecutor(name: "wal-archive")
        archiveThread = started
        return started
    }
    /// Set while a retention pass is under way (see ``removeConsumedSegments()``).
    /// The writer's segments as of its last return home: a retention pass chooses from them
    /// without waiting for the writer, which a steady stream of group commits keeps away, and
    /// ``oldestSequence`` is read from them, so a consumer starting while the writer is away
    /// still learns where the log begins.
    private var writerSegments: [SegmentWriter.Segment]
    /// Segments a retention pass chose (and archived) while the writer was away: the next group
    /// commit deletes them on the writer's thread, or the next pass does.
    private var handedOffRemovals: [SegmentWriter.Expendable] = []
    private let wallClock: @Sendable () -> Int64
    /// Set once ``close()`` has closed the writer for good.
    private let logger: Logger
    private var statistics = LogStatistics()
    /// Each tenant's share of the log (``LogConfiguration/tenantQuotas``, then ``setTenantQuotas(_:)``).
    private var tenantQuotas: [TenantName: TenantQuota]
    /// What each tenant owes, tallied by every commit while any tenant has a share.
    private var tenantLedger = TenantLedger()
    /// Tenants whose owed bytes are being read back from the log (after opening, or after their
    /// share was set): until then only ``LogConfiguration/maximumLogBytes`` limits them.
    private var unreadTenants: Set<TenantName> = []
    private var commitObserver: (@Sendable (CommitReport) -> Void)?
    private var removalObserver: (@Sendable ([SegmentRemoval]) -> Void)?

    /// Calls `observer` with the segments each retention pass removed (for metrics); `nil` removes it.
    public func observeSegmentRemovals(_ observer: (@Sendable ([SegmentRemoval]) -> Void)?) {
        removalObserver = observer
    }

    /// Calls `observer` after every successful group commit (for metrics); `nil` removes it.
    public func observeCommits(_ observer: (@Sendable (CommitReport) -> Void)?) {
        commitObserver = observer
    }

    private struct PendingAppend: Sendable {
        var events: [Event]
        /// Called once, with the events' sequence numbers or why they were not stored.
        var complete: @Sendable (Result<Range<UInt64>, LogError>) -> Void
    }

    /// Opens (creating if needed) the log under `dataDirectory`, recovering from any earlier crash,
    /// and declares its `consumers`: each gets its cursor (at the oldest event kept, when it has
    /// none yet) before the log is returned, so retention knows every one of them before anything
    /// appends or moves a cursor.
    ///
    /// - Throws: ``LogError/locked(path:)`` when another process has it open,
    ///   ``LogError/invalidCursorName(_:)`` for a consumer's name, or
    ///   ``LogError/fileSystem(_:context:)`` when the directory cannot be read or repaired.
    public static func open(
        dataDirectory: String, configuration: LogConfiguration = LogConfiguration(), consumers: [LogConsumerDeclaration] = [],
        fileSystem: any FileSystem = PosixFileSystem(), logger: Logger = Logger(label: "campaign-relay.wal"),
        wallClock: @escaping @Sendable () -> Int64 = SystemClock.wallNanoseconds
    ) async throws(LogError) -> WriteAheadLog {
        let layout = LogLayout(dataDirectory: dataDirectory)
        // Opening reads and repairs files: that happens on the writer's thread, like every later write.
        let io = BlockingExecutor(name: "wal-writer")
        let lock = try await lockLog(layout: layout, fileSystem: fileSystem, wait: configuration.lockWait, io: io)
        if let archive = configuration.archiveDirectory {
            // Made at once, not when the first segment leaves: an erasure or a replay pointed at
            // this archive before anything was archived finds the directory it was told of.
            do {
                try await io.run { () throws(FileSystemError) in try fileSystem.createDirectory(archive) }
            } catch {
                lock?.close()
                throw .fileSystem(error, context: "creating the archive directory \(archive) (--archive-dir)")
            }
        }
        let now = EventTime.now().rfc3339
        let quarantine = Quarantine(directory: layout.quarantineDirectory, fileSystem: fileSystem)
        let cursors = CursorStore(directory: layout.cursorDirectory, fileSystem: fileSystem, quarantine: quarantine)
        let opened: ([String: UInt64], SegmentWriter, RecoveryReport, RelayIdentity, RelayIdentity.Change)
        do {
            opened = try await recover(
                layout: layout, configuration: configuration, fileSystem: fileSystem, quarantine: quarantine, cursors: cursors, now: now,
                wallClock: wallClock, io: io)
        } catch {
            lock?.close()
            throw error
        }
        let (positions, writer, report, identity, change) = opened
        let erasures = await io.run { ErasureMask.pending(walDirectory: layout.walDirectory, fileSystem: fileSystem) }
        if !erasures.isEmpty {
            logger.notice("an erasure was cut short; its registrations are masked until it is finished (serve and erase finish it)")
        }
        switch change {
        case .unchanged:
            break
        case .created:
            logger.notice("this data directory is a new relay", metadata: ["relay-id": "\(identity.relayID)", "epoch": "\(identity.epoch.number)"])
        case .newEpoch:
            logger.warning(
                "this data directory is a copy (restored or cloned): a new epoch begins, so a central relay cannot take its new events for the original's",
                metadata: [
                    "relay-id": "\(identity.relayID)", "epoch": "\(identity.epoch.number)", "first-sequence": "\(identity.epoch.firstSequence)",
                    "reason": "\(identity.epoch.reason)",
                ]
            )
        case .recreated(let reason):
            logger.error(
                "the relay identity file was unreadable (kept in quarantine); this directory is now a new relay to any central relay",
                metadata: ["relay-id": "\(identity.relayID)", "reason": "\(reason)"]
            )
        }
        for damage in report.damage {
            logger.warning("log damage found on open; bytes kept in quarantine", metadata: ["damage": "\(damage)"])
        }
        if report.truncatedBytes > 0 {
            logger.notice("cut a torn tail left by an interrupted write", metadata: ["bytes": "\(report.truncatedBytes)"])
        }
        let log = WriteAheadLog(
            layout: layout, configuration: configuration, fileSystem: fileSystem, writer: writer, report: report,
            cursors: cursors, positions: positions, lock: lock, io: io, identity: identity, logger: logger, erasures: erasures,
            // Decoded frames are kept for a log that several consumers read (one alone never reads a
            // frame twice), and written ones for consumers at its end, when configured.
            decodedEventsKept: max(configuration.writtenEventsKept, consumers.count > 1 ? SharedFrameDecoder.defaultCapacity : 0)
        )
        await log.startFlushLoop()
        do {
            for consumer in consumers { try await log.declare(consumer) }
        } catch {
            await log.close()
            throw error
        }
        await log.startTenantLedger(for: Set(configuration.tenantQuotas.keys))
        return log
    }

    /// Reads the cursors, recovers the segments, checks the keys against the frames
    /// (``LogKeyCheck``) and establishes the relay identity, on the writer's thread.
    private static func recover(
        layout: LogLayout, configuration: LogConfiguration, fileSystem: any FileSystem, quarantine: Quarantine, cursors: CursorStore, now: String,
        wallClock: @escaping @Sendable () -> Int64, io: BlockingExecutor
    ) async throws(LogError) -> ([String: UInt64], SegmentWriter, RecoveryReport, RelayIdentity, RelayIdentity.Change) {
        try await io.run { () throws(LogError) -> ([String: UInt64], SegmentWriter, RecoveryReport, RelayIdentity, RelayIdentity.Change) in
            let positions = try cursors.loadAll(now: now)
            let (writer, report) = try LogRecovery.recover(
                fileSystem: fileSystem, walDirectory: layout.walDirectory, quarantine: quarantine, configuration: configuration,
                sequenceFloor: positions.values.max() ?? 1, now: now, wallClock: wallClock
            )
            // Before anything is appended or the identity moves to a new epoch: a key file that does not
            // fit the log changes nothing.
            do throws(LogError) {
                try LogKeyCheck.check(walDirectory: layout.walDirectory, fileSystem: fileSystem, keys: configuration.encryption)
            } catch {
                var unused = writer
                unused.close()
                throw error
            }
            let (identity, change) = try RelayIdentity.establish(
                layout: layout, fileSystem: fileSystem, quarantine: quarantine, nextSequence: report.nextSequence, now: now
            )
            return (positions, writer, report, identity, change)
        }
    }

    /// Takes the log's lock file, trying again every few milliseconds for up to `wait` while
    /// someone else holds it (see ``LogConfiguration/lockWait`` for who that can be).
    private static func lockLog(
        layout: LogLayout, fileSystem: any FileSystem, wait: Duration, io: BlockingExecutor
    ) async throws(LogError) -> (any FileHandle)? {
        let deadline = ContinuousClock.now.advanced(by: wait)
        while true {
            do {
                return try await io.run { () throws(FileSystemError) -> (any FileHandle)? in
                    try fileSystem.createDirectory(layout.walDirectory)
                    return try fileSystem.lockExclusively(layout.lockFile)
                }
            } catch {
                guard error.errno == LogLayout.lockHeldErrno else {
                    throw .fileSystem(error, context: "opening the log directory")
                }
                guard ContinuousClock.now < deadline, !Task.isCancelled else { throw .locked(path: layout.lockFile) }
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private init(
        layout: LogLayout, configuration: LogConfiguration, fileSystem: any FileSystem, writer: SegmentWriter,
        report: RecoveryReport, cursors: CursorStore, positions: [String: UInt64], lock: (any FileHandle)?, io: BlockingExecutor,
        identity: RelayIdentity, logger: Logger, erasures: ErasureMask, decodedEventsKept: Int
    ) {
        self.erasureMask = erasures
        self.identity = identity
        self.walDirectory = layout.walDirectory
        self.configuration = configuration
        self.tenantQuotas = configuration.tenantQuotas
        self.fileSystem = fileSystem
        self.writer = writer
        self.machine = LogWriterStateMachine(maximumPendingEvents: configuration.maximumPendingEvents)
        self.recoveryReport = report
        self.nextSequence = report.nextSequence
        self.writerFigures = writer.figures
        self.writerSegments = writer.segments
        self.wallClock = writer.wallClock
        self.cursors = cursors
        self.cursorPositions = positions
        self.lock = lock
        self.io = io
        self.cursorIO = BlockingExecutor(name: "wal-cursors")
        self.logger = logger
        self.sharedDecoder = SharedFrameDecoder(capacity: decodedEventsKept, logger: logger)
    }

    /// Every event below this sequence number is durable; readers must not read past it.
    public var durableSequence: UInt64 { nextSequence }

    /// The first sequence number still kept on disk.
    ///
    /// It does not depend on the writer being home: while a group commit's fdatasync or a segment
    /// deletion runs, the writer is on the I/O thread, and answering ``durableSequence`` then
    /// would make a consumer starting at `max(cursor, oldestSequence)` pass over every event
    /// between its cursor and the durable end without reading them.
    public var oldestSequence: UInt64 { writerSegments.first?.firstSequence ?? nextSequence }

    /// Bytes all segment files take on disk, the active segment's preallocated space included.
    public var diskBytes: Int64 { writerFigures.diskBytes }

    /// Bytes holding segment headers and frames: what the stored events cost on disk, and what
    /// ``LogConfiguration/maximumLogBytes`` limits.
    public var dataBytes: Int64 { writerFigures.dataBytes }

    /// Segment files kept (the active one included).
    public var segmentCount: Int { writerFigures.segments }

    /// Counters since the log was opened.
    public var stats: LogStatistics { statistics }

    /// Events waiting for the next group commit (tests watch appends pile up behind a sync).
    var waitingEvents: Int { machine.pendingEvents }

    private func startFlushLoop() {
        flushTask = flushLoop.run(for: self)
    }

    /// Does what a transition of ``machine`` asks besides its answer: wakes the flush loop,
    /// resumes the callers waiting for an idle writer. The one place either happens.
    private func perform(_ effects: LogWriterStateMachine.Effects) {
        if effects.wakeFlushLoop { flushLoop.wake() }
        if effects.resumeIdleWaiters {
            let waiters = idleWaiters
            idleWaiters = []
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Appends `events` durably and returns their sequence numbers.
    ///
    /// Returns after the fdatasync of the frame holding them. Concurrent calls share frames and
    /// syncs. Events of one call are contiguous and in order.
    ///
    /// - Throws: ``LogError``; when it throws, none of `events` is acknowledged (a later crash may
    ///   or may not keep them, so the caller must treat them as not stored and may resend them).
    public func append(_ events: [Event]) async throws(LogError) -> Range<UInt64> {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Range<UInt64>, LogError>, Never>) in
            admit(PendingAppend(events: events, complete: { continuation.resume(returning: $0) }), wakingFlushLoop: true)
        }
        return try result.get()
    }

    /// Appends `events` durably, as ``append(_:)`` does, and calls `completion` with their
    /// sequence numbers once they are fdatasync'ed, or with why they were not stored: for a caller
    /// that is not a task, such as an event loop answering a request where it read it, so that
    /// neither the call nor its answer goes through the task pool.
    ///
    /// `completion` is called once: on the log's executor after the group commit (or at once,
    /// on the caller's thread, when the log is closing). It must not block; hand the answer to
    /// where it belongs (`eventLoop.execute`).
    public nonisolated func append(_ events: [Event], completion: @escaping @Sendable (Result<Range<UInt64>, LogError>) -> Void) {
        let queued = submitted.withLockedValue { queue -> Bool in
            guard queue != nil else { return false }
            queue?.append(PendingAppend(events: events, complete: completion))
            return true
        }
        guard queued else { return completion(.failure(.closed)) }
        flushLoop.wake()
    }

    /// Queues `append` for the next group commit, or answers it at once: empty, refused because
    /// the log is closing or too many events wait already.
    private func admit(_ append: PendingAppend, wakingFlushLoop: Bool) {
        guard !append.events.isEmpty else {
            return append.complete(machine.lifecycle == .open ? .success(nextSequence..<nextSequence) : .failure(.closed))
        }
        if let full = tenantShareFull(append.events) {
            statistics.tenantRejections += 1
            return append.complete(.failure(full))
        }
        switch machine.append(events: append.events.count) {
        case .refuseClosed:
            append.complete(.failure(.closed))
        case .refuseOverloaded(let pendingEvents, let limit):
            statistics.overloadRejections += 1
            append.complete(.failure(.overloaded(pendingEvents: pendingEvents, limit: limit)))
        case .enqueue(let wakeFlushLoop):
            pending.append(append)
            if wakeFlushLoop, wakingFlushLoop { flushLoop.wake() }
        }
    }

    /// Admits what ``append(_:completion:)`` handed in since the last time (the flush loop, which
    /// that call wakes, is already running).
    private func admitSubmitted() {
        let taken = submitted.withLockedValue { queue -> [PendingAppend] in
            guard let appends = queue, !appends.isEmpty else { return [] }
            queue = []
            return appends
        }
        for append in taken { admit(append, wakingFlushLoop: false) }
    }

    /// Commits whatever is queued, group after group, while the writer is home and appends wait
    /// (``LogFlushLoop`` calls it when woken).
    func flushQueued() async {
        while true {
            admitSubmitted()
            guard machine.commitDeparts() else { break }
            guard let taken = writer else {
                // The machine says home, so the writer is here; were it not, the appends wait.
                assertionFailure("the writer is not home although the machine says it is")
                break
            }
            let group = pending
            pending = []
            let first = nextSequence
            let level = configuration.compressionLevel
            let batches = group.map(\.events)
            let floor = passedFloor
            let mayRemove = !machine.retentionPassUnderWay
            let handedOff = handedOffRemovals
            handedOffRemovals = []
            writer = nil
            let keepsWritten = configuration.writtenEventsKept > 0
            let decoder = sharedDecoder
            let tallies = !tenantQuotas.isEmpty
            let (returned, committed) = await io.run(moving: taken) {
                (owned: inout SegmentWriter) -> (Result<(Int, Int, Duration, [TenantName: Int64]), LogError>, SegmentWriter.RetentionPass) in
                var retention = handedOff.isEmpty ? SegmentWriter.RetentionPass() : owned.remove(handedOff, archiving: false)
                do throws(LogError) {
                    let (bytes, frames, tenantBytes) = try owned.encode(
                        batches, firstSequence: first, compressionLevel: level, tallyingTenants: tallies)
                    let placement = try owned.commit(bytes, firstSequence: first, passedBelow: floor, mayRemove: mayRemove, retention: &retention)
                    // Before the durable end moves, so a consumer woken by it finds them.
                    if keepsWritten { decoder.keep(written: frames, of: batches, segment: placement.segment, at: placement.offset) }
                    return (.success((bytes.count, frames.count, placement.synchronizeDuration, tenantBytes)), retention)
                } catch {
                    // The next commit may seal other events under the same first sequence number.
                    owned.sealer?.renew()
                    return (.failure(error), retention)
                }
            }
            let (outcome, retention) = committed.get()
            comeHome(returned)
            let effects = machine.commitReturned()
            report(retention, during: "making room for a commit")
            switch outcome {
            case .success(let (bytes, frames, sync, tenantBytes)):
                var start = first
                for append in group {
                    let end = start + UInt64(append.events.count)
                    append.complete(.success(start..<end))
                    start = end
                }
                nextSequence = start
                if !tenantBytes.isEmpty { tenantLedger.record(tenantBytes, end: start) }
                statistics.recordCommit(events: Int(start - first), bytes: bytes, frames: frames)
                commitObserver?(CommitReport(events: Int(start - first), bytes: bytes, frames: frames, synchronizeDuration: sync))
                wakeDurableWaiters()
            case .failure(let error):
                statistics.failedCommits += 1
                logger.error(
                    "group commit failed; nothing in it was acknowledged",
                    metadata: ["error": "\(error)", "events": "\(batches.reduce(0) { $0 + $1.count })"])
                for append in group { append.complete(.failure(error)) }
            }
            sealForWaiters()
            // Appends that queued meanwhile are this loop's next round, not a wake-up.
            perform(LogWriterStateMachine.Effects(resumeIdleWaiters: effects.resumeIdleWaiters))
        }
    }

    // MARK: Tenants' shares of the log

    /// The refusal of an append of a tenant whose share of the log is full; `nil` to take it.
    ///
    /// An append's tenant is its first event's (an HTTP request's events are all of one tenant).
    /// Events another relay handed on are never refused here: one refusal inside an ordered batch
    /// would hold back every tenant behind it, and the sending relay checked them on intake. The
    /// share is checked before the group commit, against what is committed: a share is passed by
    /// at most the appends of one group commit.
    private func tenantShareFull(_ events: [Event]) -> LogError? {
        guard !tenantQuotas.isEmpty, let first = events.first, first.chain == nil, let tenant = first.tenant, let quota = tenantQuotas[tenant],
            !unreadTenants.contains(tenant)
        else { return nil }
        let owed = owedBytes(of: tenant, quota: quota)
        return owed >= quota.limitBytes ? .tenantFull(tenant: tenant, usedBytes: owed, limitBytes: quota.limitBytes) : nil
    }

    /// The bytes of `tenant`'s events its destinations have not all passed.
    private func owedBytes(of tenant: TenantName, quota: TenantQuota) -> Int64 {
        tenantLedger.release(tenant, below: tenantFloor(quota))
        return tenantLedger.owed(by: tenant)
    }

    /// The lowest cursor of a tenant's destinations: what they have all passed.
    private func tenantFloor(_ quota: TenantQuota) -> UInt64 {
        quota.consumers.compactMap { cursorPositions[$0] }.min() ?? nextSequence
    }

    /// Each tenant with a share of the log: what its destinations owe and its limit, in bytes. A
    /// tenant whose owed bytes are still being read back from the log (after opening, or after its
    /// share was set) is absent.
    public func tenantShares() -> [TenantName: (owedBytes: Int64, limitBytes: Int64)] {
        var shares: [TenantName: (owedBytes: Int64, limitBytes: Int64)] = [:]
        for (tenant, quota) in tenantQuotas where !unreadTenants.contains(tenant) {
            shares[tenant] = (owedBytes(of: tenant, quota: quota), quota.limitBytes)
        }
        return shares
    }

    /// Sets the tenants' shares of the log (a reload of the configuration): a tenant given a share,
    /// or whose destinations changed, has what it owes read back from the log first; a tenant whose
    /// share is gone is limited by ``LogConfiguration/maximumLogBytes`` alone.
    public func setTenantQuotas(_ quotas: [TenantName: TenantQuota]) {
        let changed = Set(quotas.filter { tenantQuotas[$0.key]?.consumers != $0.value.consumers }.keys)
        for tenant in tenantQuotas.keys where quotas[tenant] == nil { tenantLedger.remove(tenant) }
        tenantQuotas = quotas
        startTenantLedger(for: changed)
    }

    /// Reads back from the log what `tenants` owe, from the lowest of their floors to the durable
    /// end, on a thread of its own; commits meanwhile are recorded as they happen. Until it is
    /// done, only ``LogConfiguration/maximumLogBytes`` limits them.
    private func startTenantLedger(for tenants: Set<TenantName>) {
        let quotas = tenantQuotas.filter { tenants.contains($0.key) }
        guard !quotas.isEmpty else { return }
        let floor = quotas.values.map(tenantFloor).min() ?? nextSequence
        let end = nextSequence
        guard floor < end else {
            tenantLedger.replace(tenants, upTo: end, with: TenantLedger())
            return
        }
        unreadTenants.formUnion(tenants)
        let reader = reader(from: max(floor, oldestSequence))
        logger.notice(
            "reading back what tenants' destinations still owe; until done, only --max-wal-bytes limits them",
            metadata: ["tenants": "\(tenants.map(\.text).sorted().joined(separator: ","))", "from": "\(floor)", "to": "\(end - 1)"])
        Task {
            let started = ContinuousClock.now
            let (_, result) = await BlockingExecutor(name: "tenant-ledger").run(moving: reader) {
                (owned: inout LogReader) throws(LogError) -> TenantLedger in
                var earlier = TenantLedger()
                while true {
                    let batch = try owned.read(maximumEvents: 4096, below: end)
                    guard let last = batch.events.last else { break }
                    var bytes: [TenantName: Int64] = [:]
                    for logged in batch.events {
                        guard let tenant = logged.event.tenant, tenants.contains(tenant) else { continue }
                        bytes[tenant, default: 0] += Int64(EventBinaryCodec.encode(CollectionOfOne(logged.event)).count)
                    }
                    earlier.record(bytes, end: last.sequence + 1)
                }
                owned.close()
                return earlier
            }
            await self.installTenantLedger(result, of: tenants, upTo: end, startedAt: started)
        }
    }

    private func installTenantLedger(
        _ result: Result<TenantLedger, LogError>, of tenants: Set<TenantName>, upTo end: UInt64, startedAt started: ContinuousClock.Instant
    ) {
        unreadTenants.subtract(tenants)
        switch result {
        case .success(let earlier):
            tenantLedger.replace(tenants, upTo: end, with: earlier)
            logger.notice(
                "tenants' shares of the log are in force",
                metadata: [
                    "owed": "\(tenants.map { "\($0.text)=\(tenantLedger.owed(by: $0))" }.sorted().joined(separator: ","))",
                    "took": "\((ContinuousClock.now - started).humanText)",
                ])
        case .failure(let error):
            // What was recorded since the read began is kept: it owes less than the truth, never
            // more, until the tenant's destinations pass it.
            logger.error(
                "could not read back what tenants owe; their shares count from now on", metadata: ["error": "\(error)", "tenants": "\(tenants)"])
        }
    }

    // MARK: Waiting for new events

    /// Waits until events at or beyond sequence `sequence` are durable, and returns
    /// ``durableSequence``. Returns at once when they already are, and early when the log is
    /// closed or the calling task is cancelled (check the result).
    public func waitForDurable(beyond sequence: UInt64) async -> UInt64 {
        if nextSequence > sequence || machine.lifecycle != .open || Task.isCancelled { return nextSequence }
        let id = nextWaiterID
        nextWaiterID += 1
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<UInt64, Never>) in
                if Task.isCancelled {
                    continuation.resume(returning: nextSequence)
                } else {
                    durableWaiters[id] = (sequence, continuation)
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    private func cancelWaiter(_ id: Int) {
        durableWaiters.removeValue(forKey: id)?.continuation.resume(returning: nextSequence)
    }

    private func wakeDurableWaiters(all: Bool = false) {
        for (id, waiter) in durableWaiters where all || nextSequence > waiter.beyond {
            durableWaiters[id] = nil
            waiter.continuation.resume(returning: nextSequence)
        }
    }

    // MARK: Cursors

    /// Declares a consumer while the log is open (a destination added by a reload of the
    /// configuration): creates its cursor at the oldest event kept unless it has one, durably,
    /// before it returns, so retention knows it before it reads.
    ///
    /// - Throws: ``LogError/invalidCursorName(_:)``, or ``LogError`` when the cursor cannot be written.
    public func declareConsumer(_ consumer: LogConsumerDeclaration) async throws(LogError) {
        try await declare(consumer)
    }

    /// Declares a consumer: creates its cursor at the oldest event kept unless it has one.
    private func declare(_ consumer: LogConsumerDeclaration) async throws(LogError) {
        try await registerCursor(consumer.name)
        declaredConsumers[consumer.name] = consumer
    }

    /// Creates cursor `name` at `initialPosition` (default: the oldest event kept) unless it
    /// exists, and counts it as declared; returns its position. Opening declares consumers this
    /// way; tests call it to place a cursor where they need it.
    @discardableResult
    func registerCursor(_ name: String, initialPosition: UInt64? = nil) async throws(LogError) -> UInt64 {
        try CursorStore.validate(name)
        if declaredConsumers[name] == nil { declaredConsumers[name] = .cursorFile(name) }
        if let position = cursorPositions[name] { return position }
        let position = initialPosition ?? oldestSequence
        try await commitCursor(name, to: position)
        return position
    }

    /// Where the declared consumer `name` starts reading: its cursor, or the oldest event kept
    /// when segments it had passed are gone.
    ///
    /// - Throws: ``LogError/undeclaredConsumer(_:declared:)`` when the log was opened without it.
    public func startPosition(of name: String) throws(LogError) -> UInt64 {
        guard declaredConsumers[name] != nil, let position = cursorPositions[name] else {
            throw .undeclaredConsumer(name, declared: declaredConsumers.keys.sorted())
        }
        return max(position, oldestSequence)
    }

    /// The consumers declared when the log opened, by name.
    public var consumers: [LogConsumerDeclaration] { declaredConsumers.values.sorted { $0.name < $1.name } }

    /// A reader of this log from sequence `position`, with the segments of `archiveDirectory`
    /// filling in those the log no longer has. It reads what is on disk: pass
    /// ``durableSequence`` as its limit to read only what is acknowledged.
    ///
    /// The readers of one log share its decoding (``SharedFrameDecoder``): a frame read by several
    /// consumers is decoded once, and damage they pass over is logged once.
    public nonisolated func reader(from position: UInt64, archiveDirectory: String? = nil) -> LogReader {
        LogReader(
            walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem, from: position,
            keys: configuration.encryption, sharedDecoder: sharedDecoder, damageLogger: nil, erasures: erasureMask)
    }

    /// The first event at or after `sequence` and below `limit` (one frame decoded), or `nil`.
    /// It reads files: call it from a thread made for blocking calls.
    ///
    /// - Throws: ``LogError`` when a segment cannot be read.
    public nonisolated func firstEvent(from sequence: UInt64, below limit: UInt64) throws(LogError) -> SequencedEvent? {
        try LogExtent.firstEvent(walDirectory: walDirectory, fileSystem: fileSystem, from: sequence, below: limit, keys: configuration.encryption)
    }

    /// The position of a registered cursor, or `nil`.
    public func cursorPosition(_ name: String) -> UInt64? {
        cursorPositions[name]
    }

    /// Every registered cursor and its position.
    public var cursorPositionsByName: [String: UInt64] { cursorPositions }

    /// Durably moves the cursor of the declared consumer `name` to `position` (the next sequence
    /// it will consume), then applies the retention to the segments every cursor has passed.
    ///
    /// - Throws: ``LogError/undeclaredConsumer(_:declared:)`` when the log was opened without it,
    ///   ``LogError`` when the cursor cannot be written. A segment that cannot be removed (a broken
    ///   archive) is logged and tried again later: the consumer goes on.
    public func commitCursor(_ name: String, to position: UInt64) async throws(LogError) {
        try CursorStore.validate(name)
        guard declaredConsumers[name] != nil else { throw .undeclaredConsumer(name, declared: declaredConsumers.keys.sorted()) }
        let store = cursors
        do {
            try await cursorIO.run { () throws(FileSystemError) in try store.write(name, position: position) }
        } catch {
            throw .fileSystem(error, context: "writing cursor \(name)")
        }
        cursorPositions[name] = position
        try? await removeConsumedSegments()
    }

    /// Removes a cursor, so it no longer holds segments back.
    public func removeCursor(_ name: String) async throws(LogError) {
        try CursorStore.validate(name)
        let (fileSystem, path) = (fileSystem, cursors.path(name))
        do {
            try await cursorIO.run { () throws(FileSystemError) in try fileSystem.remove(path) }
        } catch {
            guard error.errno == LogLayout.noSuchFileErrno else { throw .fileSystem(error, context: "removing cursor \(name)") }
        }
        cursorPositions[name] = nil
        declaredConsumers[name] = nil
    }

    /// Every event below this sequence number has been passed by every consumer; 0 without
    /// consumers (a log nobody reads keeps everything).
    private var passedFloor: UInt64 { cursorPositions.values.min() ?? 0 }

    /// Applies the retention now: removes (or archives) the segments every consumer has passed
    /// whose age or the quota says they may go. Cursor commits do this too; a server calls it
    /// now and then so that an idle log still expires its old segments.
    ///
    /// - Throws: ``LogError`` when deleting or archiving fails (what was removed before stays
    ///   removed; the rest is tried again next time).
    public func applyRetention() async throws(LogError) {
        try await removeConsumedSegments()
    }

    /// One retention pass at a time, and it never waits for the writer, so a consumer's cursor
    /// commit never waits behind group commits: it chooses from the writer's segments as of its
    /// last return home, copies them into the archive (if any) on a thread of its own while group
    /// commits go on (a commit removes nothing meanwhile), then deletes them on the writer's
    /// thread, at once when the writer is home, else in the next group commit.
    private func removeConsumedSegments() async throws(LogError) {
        guard machine.retentionPassBegins() else { return }
        defer { perform(machine.retentionPassEnded()) }
        let handedOff = Set(handedOffRemovals.map(\.segment.firstSequence))
        let chosen = SegmentWriter.expendable(
            in: writerSegments, retention: configuration.retention, passedBelow: passedFloor, keeping: configuration.retention.bytes,
            now: wallClock()
        ).filter { !handedOff.contains($0.segment.firstSequence) }
        guard !chosen.isEmpty || (!handedOffRemovals.isEmpty && machine.writer == .home) else { return }
        var pass = SegmentWriter.RetentionPass()
        var ready = chosen
        if let archiveDirectory = configuration.archiveDirectory, !chosen.isEmpty {
            // Copying a segment takes a while (64 MiB by default): not on the writer's thread.
            ready = []
            let (archive, directory, copier) = (SegmentArchive(directory: archiveDirectory, fileSystem: fileSystem), walDirectory, archiveIO)
            for item in chosen {
                let name = item.segment.name
                do {
                    // Under the rewrite lock: a copy begun before an erasure renamed its rewrite over
                    // the segment must not land in the archive after the erasure's pass there.
                    try await copier.run { () throws(LogError) in
                        _ = try SegmentRewriteLock.holding(walDirectory: directory, fileSystem: archive.fileSystem) { () throws(LogError) in
                            try archive.store(segmentAt: "\(directory)/\(name)", name: name)
                        }
                    }
                    ready.append(item)
                } catch {
                    pass.failure = error
                    break
                }
            }
        }
        handedOffRemovals += ready
        // Not home: a group commit has the writer, and takes the deletions along.
        if !handedOffRemovals.isEmpty, machine.removalDeparts(), let taken = writer {
            let removals = handedOffRemovals
            handedOffRemovals = []
            writer = nil
            let (returned, removed) = await io.run(moving: taken) { (owned: inout SegmentWriter) in owned.remove(removals, archiving: false) }
            comeHome(returned)
            sealForWaiters()
            perform(machine.removalReturned())
            var deleted = removed.get()
            deleted.merge(pass)
            pass = deleted
        }
        report(pass, during: "applying the retention")
        if let failure = pass.failure { throw failure }
    }

    /// The writer is back from the I/O thread: what it reports is read from it until it leaves
    /// again (``writerFigures``, ``writerSegments``, and so ``oldestSequence``).
    private func comeHome(_ returned: SegmentWriter) {
        writer = returned
        writerFigures = returned.figures
        writerSegments = returned.segments
    }

    /// Logs and counts what a retention pass removed, and how it failed.
    private func report(_ pass: SegmentWriter.RetentionPass, during activity: String) {
        if let failure = pass.failure {
            logger.error(
                "could not remove a passed segment; it stays in the log and is tried again later",
                metadata: [
                    "while": "\(activity)", "error": "\(failure)",
                ])
        }
        guard !pass.removals.isEmpty else { return }
        for reason in SegmentRemoval.Reason.allCases {
            let removals = pass.removals.filter { $0.reason == reason }
            guard let last = removals.last else { continue }
            statistics.recordRemovals(removals)
            let verb = last.archived ? "archived and deleted" : "deleted"
            let message: Logger.Message =
                switch reason {
                case .expired: "\(verb) segments every consumer has passed and the retention no longer keeps"
                case .quota: "\(verb) segments every consumer has passed before their retention ran out: the log needed room"
                }
            logger.log(
                level: reason == .quota ? .notice : .info, message,
                metadata: [
                    "segments": "\(removals.map(\.segment).joined(separator: ","))", "bytes": "\(removals.reduce(0) { $0 + $1.bytes })",
                    "first-kept-sequence": "\(oldestSequence)", "archive": "\(configuration.archiveDirectory ?? "none")",
                ])
        }
        removalObserver?(pass.removals)
    }

    /// Seals the segment being appended to, so that the next commit starts a new one, and returns
    /// the log's durable end: every event below it is then in a segment no commit writes to again,
    /// which an erasure may rewrite (``LogErasure``). With the writer home it is done at once;
    /// otherwise as the writer comes home from the group commit (or removal) under way, before it
    /// leaves again: it never waits for the appends queued behind, so a log under constant load
    /// seals within one group commit.
    public func sealActiveSegment() async -> UInt64 {
        // A closed log takes no more commits: everything is sealed already.
        if isClosedForGood { return nextSequence }
        if writer != nil {
            writer?.sealActive()
            return nextSequence
        }
        return await withCheckedContinuation { sealWaiters.append($0) }
    }

    /// Seals the active segment for the callers of ``sealActiveSegment()`` waiting, once the
    /// writer is home and ``nextSequence`` counts its last commit.
    private func sealForWaiters() {
        guard !sealWaiters.isEmpty, writer != nil else { return }
        writer?.sealActive()
        let waiters = sealWaiters
        sealWaiters = []
        for waiter in waiters { waiter.resume(returning: nextSequence) }
    }

    /// Waits until the writer is home with nothing queued and no retention pass under way.
    private func waitUntilIdle() async {
        while machine.idleWaitBegins() {
            await withCheckedContinuation { idleWaiters.append($0) }
        }
    }

    /// Waits for pending appends, applies the retention once more (a consumer that found nothing
    /// new to read still lets expired segments go), closes the files and releases the lock.
    /// Later appends throw ``LogError/closed``.
    public func close() async {
        guard machine.closeBegins() else { return }
        // What was handed in from outside the actor and not yet admitted is refused (closing),
        // and so is what is handed in from now on.
        let late = submitted.withLockedValue { queue -> [PendingAppend] in
            defer { queue = nil }
            return queue ?? []
        }
        for append in late { admit(append, wakingFlushLoop: false) }
        // Appends are refused from here on: once the last group commit and any pass under way
        // are done, the writer stays home for a last pass.
        await waitUntilIdle()
        // A failure is logged, and the segments stay for the next pass.
        try? await removeConsumedSegments()
        repeat { await waitUntilIdle() } while !machine.shut()
        wakeDurableWaiters(all: true)
        sealForWaiters()
        isClosedForGood = true
        writer?.close()
        writer = nil
        lock?.close()
        flushLoop.finish()
        await flushTask?.value
    }
}

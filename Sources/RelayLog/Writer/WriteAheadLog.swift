public import Logging
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
/// Opening recovers from any earlier stop on its own (see ``RecoveryReport``). Consumers read with
/// ``LogReader`` up to ``durableSequence`` and keep their place with named cursors; a segment is
/// deleted once every cursor has passed it.
public actor WriteAheadLog {
    /// Where the log's files are.
    public nonisolated let walDirectory: String
    /// The configuration the log was opened with.
    public nonisolated let configuration: LogConfiguration
    /// What opening the log found and repaired.
    public nonisolated let recoveryReport: RecoveryReport
    /// The file layer in use.
    public nonisolated let fileSystem: any FileSystem
    /// The data directory's relay id and epochs, as opening the log found or made them.
    public nonisolated let identity: RelayIdentity

    private var writer: SegmentWriter?
    private var nextSequence: UInt64
    private var pending: [PendingAppend] = []
    private var pendingEvents = 0
    private var isFlushing = false
    private var isClosed = false
    private var flushWaiters: [CheckedContinuation<Void, Never>] = []
    private var durableWaiters: [Int: (beyond: UInt64, continuation: CheckedContinuation<UInt64, Never>)] = [:]
    private var nextWaiterID = 0
    private var cursorPositions: [String: UInt64]
    private let cursors: CursorStore
    private let lock: (any FileHandle)?
    /// The thread that writes and syncs frames and deletes segments.
    private let io: BlockingExecutor
    /// The thread that writes cursors, so a cursor commit never waits behind a group commit.
    private let cursorIO: BlockingExecutor
    private let logger: Logger
    private var statistics = LogStatistics()
    private var commitObserver: (@Sendable (CommitReport) -> Void)?

    /// Calls `observer` after every successful group commit (for metrics); `nil` removes it.
    public func observeCommits(_ observer: (@Sendable (CommitReport) -> Void)?) {
        commitObserver = observer
    }

    private struct PendingAppend {
        var events: [Event]
        var continuation: CheckedContinuation<Result<Range<UInt64>, LogError>, Never>
    }

    /// Opens (creating if needed) the log under `dataDirectory`, recovering from any earlier crash.
    ///
    /// - Throws: ``LogError/locked(path:)`` when another process has it open, or
    ///   ``LogError/fileSystem(_:context:)`` when the directory cannot be read or repaired.
    public static func open(
        dataDirectory: String, configuration: LogConfiguration = LogConfiguration(),
        fileSystem: any FileSystem = PosixFileSystem(), logger: Logger = Logger(label: "campaign-relay.wal")
    ) async throws(LogError) -> WriteAheadLog {
        let layout = LogLayout(dataDirectory: dataDirectory)
        // Opening reads and repairs files: that happens on the writer's thread, like every later write.
        let io = BlockingExecutor(name: "wal-writer")
        let lock = try await lockLog(layout: layout, fileSystem: fileSystem, wait: configuration.lockWait, io: io)
        let now = EventTime.now().rfc3339
        let quarantine = Quarantine(directory: layout.quarantineDirectory, fileSystem: fileSystem)
        let cursors = CursorStore(directory: layout.cursorDirectory, fileSystem: fileSystem, quarantine: quarantine)
        let (positions, writer, report, identity, change) = try await io.run {
            () throws(LogError) -> ([String: UInt64], SegmentWriter, RecoveryReport, RelayIdentity, RelayIdentity.Change) in
            let positions = try cursors.loadAll(now: now)
            let (writer, report) = try LogRecovery.recover(
                fileSystem: fileSystem, walDirectory: layout.walDirectory, quarantine: quarantine, configuration: configuration,
                sequenceFloor: positions.values.max() ?? 1, now: now
            )
            let (identity, change) = try RelayIdentity.establish(
                layout: layout, fileSystem: fileSystem, quarantine: quarantine, nextSequence: report.nextSequence, now: now
            )
            return (positions, writer, report, identity, change)
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
        return WriteAheadLog(
            layout: layout, configuration: configuration, fileSystem: fileSystem, writer: writer, report: report,
            cursors: cursors, positions: positions, lock: lock, io: io, identity: identity, logger: logger
        )
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
        identity: RelayIdentity, logger: Logger
    ) {
        self.identity = identity
        self.walDirectory = layout.walDirectory
        self.configuration = configuration
        self.fileSystem = fileSystem
        self.writer = writer
        self.recoveryReport = report
        self.nextSequence = report.nextSequence
        self.cursors = cursors
        self.cursorPositions = positions
        self.lock = lock
        self.io = io
        self.cursorIO = BlockingExecutor(name: "wal-cursors")
        self.logger = logger
    }

    /// Every event below this sequence number is durable; readers must not read past it.
    public var durableSequence: UInt64 { nextSequence }

    /// The first sequence number still kept on disk.
    public var oldestSequence: UInt64 { writer?.segments.first?.firstSequence ?? nextSequence }

    /// Bytes all segment files take on disk, the active segment's preallocated space included.
    public var diskBytes: Int64 { writer?.allocatedBytes ?? 0 }

    /// Bytes holding segment headers and frames: what the stored events cost on disk, and what
    /// ``LogConfiguration/maximumLogBytes`` limits.
    public var dataBytes: Int64 { writer?.totalBytes ?? 0 }

    /// Counters since the log was opened.
    public var stats: LogStatistics { statistics }

    /// Events waiting for the next group commit (tests watch appends pile up behind a sync).
    var waitingEvents: Int { pendingEvents }

    /// Appends `events` durably and returns their sequence numbers.
    ///
    /// Returns after the fdatasync of the frame holding them. Concurrent calls share frames and
    /// syncs. Events of one call are contiguous and in order.
    ///
    /// - Throws: ``LogError``; when it throws, none of `events` is acknowledged (a later crash may
    ///   or may not keep them, so the caller must treat them as not stored and may resend them).
    public func append(_ events: [Event]) async throws(LogError) -> Range<UInt64> {
        guard !isClosed else { throw .closed }
        guard !events.isEmpty else { return nextSequence..<nextSequence }
        guard pendingEvents + events.count <= configuration.maximumPendingEvents else {
            statistics.overloadRejections += 1
            throw .overloaded(pendingEvents: pendingEvents, limit: configuration.maximumPendingEvents)
        }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Range<UInt64>, LogError>, Never>) in
            pending.append(PendingAppend(events: events, continuation: continuation))
            pendingEvents += events.count
            if !isFlushing {
                isFlushing = true
                Task { await self.flushPending() }
            }
        }
        return try result.get()
    }

    /// Commits whatever is pending, group after group, until nothing is left.
    private func flushPending() async {
        while !pending.isEmpty, let taken = writer {
            let group = pending
            pending = []
            pendingEvents = 0
            let first = nextSequence
            let level = configuration.compressionLevel
            let batches = group.map(\.events)
            writer = nil
            let (returned, outcome) = await io.run(moving: taken) { (owned: inout SegmentWriter) throws(LogError) -> (Int, Int, Duration) in
                let (bytes, frames) = Frame.encodeGroup(batches, firstSequence: first, compressionLevel: level)
                let sync = try owned.commit(bytes, firstSequence: first)
                return (bytes.count, frames, sync)
            }
            writer = returned
            switch outcome {
            case .success(let (bytes, frames, sync)):
                var start = first
                for append in group {
                    let end = start + UInt64(append.events.count)
                    append.continuation.resume(returning: .success(start..<end))
                    start = end
                }
                nextSequence = start
                statistics.recordCommit(events: Int(start - first), bytes: bytes, frames: frames)
                commitObserver?(CommitReport(events: Int(start - first), bytes: bytes, frames: frames, synchronizeDuration: sync))
                wakeDurableWaiters()
            case .failure(let error):
                statistics.failedCommits += 1
                logger.error(
                    "group commit failed; nothing in it was acknowledged",
                    metadata: ["error": "\(error)", "events": "\(batches.reduce(0) { $0 + $1.count })"])
                for append in group { append.continuation.resume(returning: .failure(error)) }
            }
        }
        isFlushing = false
        let waiters = flushWaiters
        flushWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Waiting for new events

    /// Waits until events at or beyond sequence `sequence` are durable, and returns
    /// ``durableSequence``. Returns at once when they already are, and early when the log is
    /// closed or the calling task is cancelled (check the result).
    public func waitForDurable(beyond sequence: UInt64) async -> UInt64 {
        if nextSequence > sequence || isClosed || Task.isCancelled { return nextSequence }
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

    /// Registers a consumer: creates its cursor at `initialPosition` (default: the oldest event
    /// kept) unless it exists. Returns the cursor's position.
    @discardableResult
    public func registerCursor(_ name: String, initialPosition: UInt64? = nil) async throws(LogError) -> UInt64 {
        try CursorStore.validate(name)
        if let position = cursorPositions[name] { return position }
        let position = initialPosition ?? oldestSequence
        try await commitCursor(name, to: position)
        return position
    }

    /// The position of a registered cursor, or `nil`.
    public func cursorPosition(_ name: String) -> UInt64? {
        cursorPositions[name]
    }

    /// Every registered cursor and its position.
    public var cursorPositionsByName: [String: UInt64] { cursorPositions }

    /// Durably moves cursor `name` to `position` (the next sequence it will consume), then deletes
    /// the segments every cursor has passed.
    public func commitCursor(_ name: String, to position: UInt64) async throws(LogError) {
        try CursorStore.validate(name)
        let store = cursors
        do {
            try await cursorIO.run { () throws(FileSystemError) in try store.write(name, position: position) }
        } catch {
            throw .fileSystem(error, context: "writing cursor \(name)")
        }
        cursorPositions[name] = position
        try await removeConsumedSegments()
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
    }

    private func removeConsumedSegments() async throws(LogError) {
        guard let floor = cursorPositions.values.min(), let current = writer, current.segments.count > 1,
            current.segments[1].firstSequence <= floor
        else { return }
        // Wait for the writer to be home (a commit may hold it), then delete on its thread.
        while writer == nil { await waitForFlush() }
        guard let taken = writer else { return }
        writer = nil
        let (returned, result) = await io.run(moving: taken) { (owned: inout SegmentWriter) throws(LogError) in
            try owned.removeSegments(below: floor)
        }
        writer = returned
        let waiters = flushWaiters
        flushWaiters = []
        for waiter in waiters { waiter.resume() }
        if !pending.isEmpty, !isFlushing {
            isFlushing = true
            Task { await self.flushPending() }
        }
        let removed = try result.get()
        if !removed.isEmpty {
            logger.info("deleted segments every cursor has passed", metadata: ["segments": "\(removed.joined(separator: ","))", "below": "\(floor)"])
        }
    }

    private func waitForFlush() async {
        await withCheckedContinuation { flushWaiters.append($0) }
    }

    /// Waits for pending appends, closes the files and releases the lock. Later appends throw ``LogError/closed``.
    public func close() async {
        guard !isClosed else { return }
        isClosed = true
        while isFlushing || writer == nil { await waitForFlush() }
        wakeDurableWaiters(all: true)
        writer?.close()
        writer = nil
        lock?.close()
    }
}

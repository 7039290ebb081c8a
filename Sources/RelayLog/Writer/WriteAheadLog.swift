import Logging
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
/// declared when the log opens (``LogConsumerDeclaration``); each reads with a ``FrameReader`` the
/// log makes (``reader(from:archiveDirectory:)``) up to ``durableSequence`` and keeps its place
/// with its named cursor; a segment may leave once every cursor has passed it, as
/// ``LogConfiguration/retention`` says.
///
/// The actor is the driver of the types that do the work: the writer's state machine
/// (``LogWriterStateMachine``) decides, the group committer (``GroupCommitter``) numbers and
/// answers appends, the frame store (``FrameStore``, today ``SegmentFileStore``) keeps frames,
/// the consumer registry (``ConsumerRegistry``) keeps cursors and the retention floor, the tenants'
/// shares (``TenantLogShares``) are fed from commit reports, and the retention pass
/// (``LogRetentionPass``) chooses what to drop. docs/seams/log.md draws the seam.
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

    /// Where the frames are kept.
    let store: any FrameStore
    /// The store as of its last answer: a retention pass chooses from it without waiting for an
    /// append under way, and ``oldestSequence`` is read from it, so a consumer starting while a
    /// commit is away still learns where the log begins.
    var storeExtent: FrameStoreExtent
    /// The writer's decisions: appends taken or refused, commits and removals leaving, sealing, closing.
    var machine: LogWriterStateMachine
    /// The appends queued for the next group commit and their sequence numbers.
    var committer: GroupCommitter
    /// Appends handed in by ``append(_:completion:)`` from outside the actor.
    nonisolated let submitted = SubmittedAppends()
    /// The task that commits queued appends, started at open and joined by ``close()``.
    let flushLoop = LogFlushLoop()
    private var flushTask: Task<Void, Never>?
    /// Callers of ``close()`` waiting for the writer to be idle.
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// Callers of ``sealActiveSegment()`` waiting for the writer to come home (only while it is
    /// away: the machine's state says so).
    private var sealWaiters: [CheckedContinuation<UInt64, Never>] = []
    private var durableWaiters = DurableEndWaiters()
    /// The consumers, their cursors and the retention floor.
    var consumerRegistry: ConsumerRegistry
    /// The retention's spans handed to the next append.
    var retentionPass = LogRetentionPass()
    let wallClock: @Sendable () -> Int64
    let logger: Logger
    var statistics = LogStatistics()
    /// Each tenant's share of the log and what it owes.
    var logShares: TenantLogShares
    var commitObserver: (@Sendable (CommitReport) -> Void)?
    var removalObserver: (@Sendable ([SegmentRemoval]) -> Void)?

    /// Calls `observer` with the segments each retention pass removed (for metrics); `nil` removes it.
    public func observeSegmentRemovals(_ observer: (@Sendable ([SegmentRemoval]) -> Void)?) {
        removalObserver = observer
    }

    /// Calls `observer` after every successful group commit (for metrics); `nil` removes it.
    public func observeCommits(_ observer: (@Sendable (CommitReport) -> Void)?) {
        commitObserver = observer
    }

    init(
        opened: OpenedFrameStore, walDirectory: String, configuration: LogConfiguration, fileSystem: any FileSystem, logger: Logger,
        wallClock: @escaping @Sendable () -> Int64
    ) {
        self.store = opened.store
        self.storeExtent = opened.extent
        self.erasureMask = opened.erasures
        self.identity = opened.identity
        self.walDirectory = walDirectory
        self.configuration = configuration
        self.logShares = TenantLogShares(configuration.tenantLogShares)
        self.fileSystem = fileSystem
        self.machine = LogWriterStateMachine(maximumPendingEvents: configuration.maximumPendingEvents)
        self.recoveryReport = opened.report
        self.committer = GroupCommitter(nextSequence: opened.report.nextSequence)
        self.wallClock = wallClock
        self.consumerRegistry = ConsumerRegistry(positions: opened.positions, cursors: opened.cursors)
        self.logger = logger
        self.sharedDecoder = opened.sharedDecoder
    }

    /// The next event's sequence number.
    var nextSequence: UInt64 { committer.nextSequence }

    /// Every event below this sequence number is durable; readers must not read past it.
    public var durableSequence: UInt64 { nextSequence }

    /// The first sequence number still kept on disk.
    ///
    /// It does not depend on the writer being home: while a group commit's fdatasync or a segment
    /// deletion runs, the writer is on the I/O thread, and answering ``durableSequence`` then
    /// would make a consumer starting at `max(cursor, oldestSequence)` pass over every event
    /// between its cursor and the durable end without reading them.
    public var oldestSequence: UInt64 { storeExtent.spans.first?.firstSequence ?? nextSequence }

    /// Bytes all segment files take on disk, the active segment's preallocated space included.
    public var diskBytes: Int64 { storeExtent.diskBytes }

    /// Bytes holding segment headers and frames: what the stored events cost on disk, and what
    /// ``LogConfiguration/maximumLogBytes`` limits.
    public var dataBytes: Int64 { storeExtent.dataBytes }

    /// Segment files kept (the active one included).
    public var segmentCount: Int { storeExtent.spans.count }

    /// Counters since the log was opened.
    public var stats: LogStatistics { statistics }

    /// Events waiting for the next group commit (tests watch appends pile up behind a sync).
    var waitingEvents: Int { machine.pendingEvents }

    func startFlushLoop() {
        flushTask = flushLoop.run(for: self)
    }

    /// Does what a transition of ``machine`` asks besides its answer: seals the active segment for
    /// the callers waiting, wakes the flush loop, resumes the callers waiting for an idle writer.
    /// The one place any of these happens.
    func perform(_ effects: LogWriterStateMachine.Effects) {
        if effects.sealActiveSegment {
            // The writer is home and ``nextSequence`` counts what it brought back.
            store.sealActive()
            let waiters = sealWaiters
            sealWaiters = []
            for waiter in waiters { waiter.resume(returning: nextSequence) }
        }
        if effects.wakeFlushLoop { flushLoop.wake() }
        if effects.resumeIdleWaiters {
            let waiters = idleWaiters
            idleWaiters = []
            for waiter in waiters { waiter.resume() }
        }
    }

    // MARK: Waiting for new events

    /// Waits until events at or beyond sequence `sequence` are durable, and returns
    /// ``durableSequence``. Returns at once when they already are, and early when the log is
    /// closed or the calling task is cancelled (check the result).
    public func waitForDurable(beyond sequence: UInt64) async -> UInt64 {
        if nextSequence > sequence || machine.lifecycle != .open || Task.isCancelled { return nextSequence }
        let id = durableWaiters.reserveID()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<UInt64, Never>) in
                if Task.isCancelled {
                    continuation.resume(returning: nextSequence)
                } else {
                    durableWaiters.add(id, beyond: sequence, continuation)
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    private func cancelWaiter(_ id: Int) {
        durableWaiters.cancel(id, durableEnd: nextSequence)
    }

    /// Resumes the waiters the durable end passed (`all`: every one, the log is closing).
    func wakeDurableWaiters(all: Bool = false) {
        durableWaiters.wake(durableEnd: nextSequence, all: all)
    }

    // MARK: Reading

    /// A reader of this log from sequence `position`, with the segments of `archiveDirectory`
    /// filling in those the log no longer has. It reads what is on disk: pass
    /// ``durableSequence`` as its limit to read only what is acknowledged.
    ///
    /// The readers of one log share its decoding (``SharedFrameDecoder``): a frame read by several
    /// consumers is decoded once, and damage they pass over is logged once.
    public nonisolated func reader(from position: UInt64, archiveDirectory: String? = nil) -> any FrameReader {
        store.readFrames(from: position, archiveDirectory: archiveDirectory)
    }

    /// The first event at or after `sequence` and below `limit` (one frame decoded), or `nil`.
    /// It reads files: call it from a thread made for blocking calls.
    ///
    /// - Throws: ``LogError`` when a segment cannot be read.
    public nonisolated func firstEvent(from sequence: UInt64, below limit: UInt64) throws(LogError) -> SequencedEvent? {
        try store.firstEvent(from: sequence, below: limit)
    }

    // MARK: Sealing and closing

    /// Seals the segment being appended to, so that the next commit starts a new one, and returns
    /// the log's durable end: every event below it is then in a segment no commit writes to again,
    /// which an erasure may rewrite (``LogErasure``). With the writer home it is done at once;
    /// otherwise as the writer comes home from the group commit (or removal) under way, before it
    /// leaves again: it never waits for the appends queued behind, so a log under constant load
    /// seals within one group commit.
    public func sealActiveSegment() async -> UInt64 {
        switch machine.sealRequested() {
        case .alreadySealed:
            // A closed log takes no more commits: everything is sealed already.
            return nextSequence
        case .sealNow:
            store.sealActive()
            return nextSequence
        case .waitForWriter:
            // Answered by ``perform(_:)`` when the transition bringing the writer home says so.
            return await withCheckedContinuation { sealWaiters.append($0) }
        }
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
        for append in submitted.close() { admit(append, wakingFlushLoop: false) }
        // Appends are refused from here on: once the last group commit and any pass under way
        // are done, the writer stays home for a last pass.
        await waitUntilIdle()
        // A failure is logged, and the segments stay for the next pass.
        try? await removeConsumedSegments()
        repeat { await waitUntilIdle() } while !machine.shut()
        wakeDurableWaiters(all: true)
        await store.close()
        flushLoop.finish()
        await flushTask?.value
    }
}

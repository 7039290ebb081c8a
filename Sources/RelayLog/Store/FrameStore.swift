package import RelayCore

/// Where the log keeps its frames: the one place where "where frames are stored" can be swapped.
///
/// ``WriteAheadLog`` decides everything else: which events go into a group commit and under
/// which sequence numbers, when a commit may leave (``LogWriterStateMachine``), which consumers
/// hold frames back (``ConsumerRegistry``), what each tenant owes (``TenantLogShares``) and which
/// frames the retention lets go (``LogRetentionPass``). A store keeps frames, in sequence order,
/// and nothing else. The four operations (docs/seams/log.md says the same at more length):
///
/// - **append frames** (``append(_:room:)``): stores one group commit's frames after everything
///   already stored and returns only once they are durable, with the new durable end. The
///   sequence numbers are given (``FrameGroup/firstSequence`` is always the durable end before
///   the call): a store never chooses them. On failure nothing of the group is durable, the
///   durable end does not move, and a later append may reuse the same sequence numbers.
/// - **read frames from** (``readFrames(from:archiveDirectory:)``): a reader that returns the
///   events at or after a sequence, in order, each once; it may see frames not yet durable, so
///   a reader in the writing process passes the durable end as its limit.
/// - **drop frames below** (``dropFrames(_:)``): removes whole spans every consumer has passed,
///   oldest first; what was dropped stays dropped, even after a later failure.
/// - **the durable end** (``FrameStoreExtent/durableEnd``, in every answer): every event below it
///   is durable and readable. It moves by a successful append; or, in a failed append's answer,
///   past events of an earlier commit that failed without a clear answer and that the store then
///   found durable after all (a database that committed it as its connection broke): the log
///   keeps them, unacknowledged, and numbers the next group after them.
///
/// Calls come from one ``WriteAheadLog``, one at a time (its state machine never lets an append
/// and a drop overlap); the store is an actor so that its blocking I/O runs on a thread of its own
/// (``RelayIO/BlockingActor``), never on the cooperative pool. Every answer carries the store's
/// ``FrameStoreExtent``, which the log keeps, so that it answers ``WriteAheadLog/oldestSequence``
/// and chooses what to drop without waiting for an append under way.
package protocol FrameStore: Actor {
    /// What the store holds now: its durable end, its spans and their bytes.
    var extent: FrameStoreExtent { get }

    /// Appends `group`'s events as frames after everything stored, durably, first dropping the
    /// spans of `room` (``FrameRoom/handedOff``) and, when the store needs room for them, more
    /// spans every consumer has passed (below ``FrameRoom/passedBelow``). Never throws: the
    /// outcome says what became durable and what was dropped, each on its own.
    func append(_ group: FrameGroup, room: FrameRoom) async -> FrameAppendOutcome

    /// Drops `spans` (chosen from ``extent`` by the retention), oldest first, each only while it
    /// is still the oldest; stops at the first failure. What was dropped stays dropped.
    func dropFrames(_ spans: [FrameDrop]) async -> FrameDropOutcome

    /// Whether dropped spans are copied somewhere first (``archive(_:)``), which takes a while.
    nonisolated var keepsArchive: Bool { get }

    /// Copies `spans` where dropped frames are kept (`--archive-dir`) before ``dropFrames(_:)``
    /// removes them, on a thread of its own so that appends go on meanwhile; returns those copied,
    /// oldest first, and the failure that stopped it. A store without an archive returns them all.
    nonisolated func archive(_ spans: [FrameDrop]) async -> (archived: [FrameDrop], failure: LogError?)

    /// A reader of the stored events from sequence `sequence` (or the first kept after it), with
    /// the archive's spans filling in those the store no longer has.
    nonisolated func readFrames(from sequence: UInt64, archiveDirectory: String?) -> any FrameReader

    /// The first stored event at or after `sequence` and below `limit` (one frame decoded), or
    /// `nil`; it may block, so callers run it on a thread made for blocking calls.
    ///
    /// - Throws: ``LogError`` when the store cannot be read.
    nonisolated func firstEvent(from sequence: UInt64, below limit: UInt64) throws(LogError) -> SequencedEvent?

    /// Seals what is stored: frames appended after this returns are kept apart from those before,
    /// which no append writes to again (an erasure rewrites them, ``LogErasure``). It takes effect
    /// at the next append; a store whose frames are never rewritten in place does nothing.
    nonisolated func sealActive()

    /// Closes the store's files or connections; the log calls nothing after it.
    func close() async
}

/// One group commit handed to a ``FrameStore``: the events of each append, in order, and the
/// sequence number of the first.
package struct FrameGroup: Sendable {
    /// The events of each append of the commit, in the order they were admitted.
    package var batches: [[Event]]
    /// The first event's sequence number: the store's durable end when the commit left.
    package var firstSequence: UInt64
    /// Whether the store counts each tenant's bytes (``FrameAppend/tenantBytes``): only while a
    /// tenant has a share of the log (``TenantLogShares``).
    package var tallyingTenants: Bool

    /// The number of events in the group.
    package var eventCount: Int { batches.reduce(0) { $0 + $1.count } }
}

/// What a store may drop while it appends.
package struct FrameRoom: Sendable {
    /// Every event below it has been passed by every consumer: a store short of room may drop
    /// spans wholly below it. 0: nothing may be dropped (a retention pass is choosing).
    package var passedBelow: UInt64
    /// Spans a retention pass chose while the store was busy: dropped first.
    package var handedOff: [FrameDrop]
}

/// What one append did.
package struct FrameAppendOutcome: Sendable {
    /// The appended frames, or why nothing of the group is durable.
    package var result: Result<FrameAppend, LogError>
    /// The spans dropped on the way (handed off, or for room), and how dropping failed.
    package var dropped: FrameDropReport
    /// The store after the append.
    package var extent: FrameStoreExtent

    /// An outcome from its parts.
    package init(result: Result<FrameAppend, LogError>, dropped: FrameDropReport, extent: FrameStoreExtent) {
        self.result = result
        self.dropped = dropped
        self.extent = extent
    }
}

/// A durable append.
package struct FrameAppend: Sendable {
    /// The durable end after it: the group's first sequence plus its events.
    package var durableEnd: UInt64
    /// Bytes written.
    package var bytes: Int
    /// Frames written.
    package var frames: Int
    /// How long making them durable took (the fdatasync).
    package var synchronizeDuration: Duration
    /// Bytes of each tenant's events, encoded before compression (when the group tallied them).
    package var tenantBytes: [TenantName: Int64]

    /// An append from its parts.
    package init(durableEnd: UInt64, bytes: Int, frames: Int, synchronizeDuration: Duration, tenantBytes: [TenantName: Int64]) {
        self.durableEnd = durableEnd
        self.bytes = bytes
        self.frames = frames
        self.synchronizeDuration = synchronizeDuration
        self.tenantBytes = tenantBytes
    }
}

/// What one drop did.
package struct FrameDropOutcome: Sendable {
    /// The spans dropped, and how dropping failed.
    package var report: FrameDropReport
    /// The store after the drop.
    package var extent: FrameStoreExtent

    /// An outcome from its parts.
    package init(report: FrameDropReport, extent: FrameStoreExtent) {
        self.report = report
        self.extent = extent
    }
}

/// What a store holds: the durable end, the spans that may be dropped one by one, and the bytes.
package struct FrameStoreExtent: Sendable {
    /// Every event below it is durable.
    package var durableEnd: UInt64
    /// The store's spans, oldest first; the last one is being appended to.
    package var spans: [FrameSpan]
    /// Bytes holding the stored frames (and their spans' headers): what size limits count.
    package var dataBytes: Int64
    /// Bytes the store takes, space allocated ahead included.
    package var diskBytes: Int64

    /// The first sequence number still kept.
    package var oldestSequence: UInt64 { spans.first?.firstSequence ?? durableEnd }

    /// An extent from its parts.
    package init(durableEnd: UInt64, spans: [FrameSpan], dataBytes: Int64, diskBytes: Int64) {
        self.durableEnd = durableEnd
        self.spans = spans
        self.dataBytes = dataBytes
        self.diskBytes = diskBytes
    }
}

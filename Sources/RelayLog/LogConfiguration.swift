public import RelayCore

/// How the write-ahead log sizes its files, compresses, and limits itself.
public struct LogConfiguration: Sendable, Hashable {
    /// A new segment is started when the next frame would take the current one past this size.
    public var segmentBytes: Int64
    /// The most bytes all segments together may take; an append that would pass it fails with
    /// ``LogError/logFull(usedBytes:limitBytes:)``. `nil` means no limit.
    public var maximumLogBytes: Int64?
    /// zlib level for frame payloads: 1 is fastest (the default), 9 smallest, 0 stores uncompressed.
    public var compressionLevel: Int32
    /// The zlib level frames are compressed at unless told otherwise: fast, and most of the gain.
    public static let defaultCompressionLevel: Int32 = 1
    /// The most events that may wait for the next group commit; more fails with
    /// ``LogError/overloaded(pendingEvents:limit:)`` instead of queueing without bound.
    public var maximumPendingEvents: Int
    /// Whether the active segment is filled with zeros ahead of its frames, ``preallocationStep``
    /// at a time (within ``segmentBytes`` and ``maximumLogBytes``). An fdatasync that only
    /// overwrites allocated blocks changes no file metadata and skips the file-system journal,
    /// which makes acknowledgements faster and steadier; growing the file costs a journalled sync
    /// once per step instead of once per commit.
    public var preallocateSegments: Bool
    /// How far ahead of the frames the active segment is filled with zeros, in bytes.
    public var preallocationStep: Int64
    /// How long opening waits for a lock file that someone else holds before it fails with
    /// ``LogError/locked(path:)``. The lock's open file description is shared with any child
    /// process forked by its holder until that child calls `exec`. ``WriteAheadLog/close()``
    /// releases it for every copy (`LOCK_UN`), but a holder killed meanwhile leaves it held for a
    /// moment by the process it was spawning; a short wait rides that out, while a log truly in
    /// use is still reported quickly.
    public var lockWait: Duration
    /// How long and within how many bytes segments every consumer has passed are kept.
    public var retention: LogRetention
    /// Where segments leaving the log are copied first (crash-safely, see ``SegmentArchive``);
    /// `nil`: they are deleted. Created when the log opens, if missing.
    public var archiveDirectory: String?
    /// How many of the latest written events the log keeps in memory, as they were appended, for
    /// the consumers reading its end (``SharedFrameDecoder``): they take them without inflating and
    /// decoding their frames. 0 (the default): consumers decode what they read. A server whose
    /// consumers follow the log sets it to what they read behind the writer, at most.
    public var writtenEventsKept: Int = 0
    /// Each tenant's share of the log: the most bytes of its events its own destinations may owe
    /// before its appends are refused with ``LogError/tenantFull(tenant:usedBytes:limitBytes:)``
    /// (see ``TenantLogShare``). Empty (the default): tenants are limited by ``maximumLogBytes`` alone.
    public var tenantLogShares: [TenantName: TenantLogShare] = [:]
    /// The keys of encryption at rest (`--encryption-key-file`): with them, every frame written is
    /// sealed with the newest key (AES-256-GCM, ``FrameEnvelope``) and frames sealed with any of them
    /// are read; without them (the default) frames are written in the clear and an encrypted frame
    /// stops its reader with ``LogError/unreadableFrame(_:segment:offset:)``.
    public var encryption: LogKeyRing?

    /// The defaults: 64 MiB segments preallocated 4 MiB at a time, no size limit, zlib level 1,
    /// 4 million pending events, half a second of waiting for a held lock, passed segments kept
    /// a day within 10 GiB (``LogRetention/standard``), no archive.
    public init(
        segmentBytes: Int64 = 64 << 20, maximumLogBytes: Int64? = nil, compressionLevel: Int32 = LogConfiguration.defaultCompressionLevel,
        maximumPendingEvents: Int = 4_000_000, preallocateSegments: Bool = true, preallocationStep: Int64 = 4 << 20,
        lockWait: Duration = .milliseconds(500), retention: LogRetention = .standard, archiveDirectory: String? = nil
    ) {
        self.segmentBytes = segmentBytes
        self.maximumLogBytes = maximumLogBytes
        self.compressionLevel = compressionLevel
        self.maximumPendingEvents = maximumPendingEvents
        self.preallocateSegments = preallocateSegments
        self.preallocationStep = preallocationStep
        self.lockWait = lockWait
        self.retention = retention
        self.archiveDirectory = archiveDirectory
    }
}

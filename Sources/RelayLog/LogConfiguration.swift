/// How the write-ahead log sizes its files, compresses, and limits itself.
public struct LogConfiguration: Sendable, Hashable {
    /// A new segment is started when the next frame would take the current one past this size.
    public var segmentBytes: Int64
    /// The most bytes all segments together may take; an append that would pass it fails with
    /// ``LogError/logFull(usedBytes:limitBytes:)``. `nil` means no limit.
    public var maximumLogBytes: Int64?
    /// zlib level for frame payloads: 1 is fastest (the default), 9 smallest, 0 stores uncompressed.
    public var compressionLevel: Int32
    /// The most events that may wait for the next group commit; more fails with
    /// ``LogError/overloaded(pendingEvents:limit:)`` instead of queueing without bound.
    public var maximumPendingEvents: Int
    /// Whether a new segment is filled with zeros up to ``segmentBytes`` (within
    /// ``maximumLogBytes``) before frames go into it. Syncing overwritten blocks avoids a
    /// file-system journal commit per fdatasync, which shortens and steadies acknowledgement
    /// latency; the cost is writing each segment's size once more, at the roll.
    public var preallocateSegments: Bool

    /// The defaults: 64 MiB preallocated segments, no size limit, zlib level 1, 4 million pending events.
    public init(
        segmentBytes: Int64 = 64 << 20, maximumLogBytes: Int64? = nil, compressionLevel: Int32 = 1,
        maximumPendingEvents: Int = 4_000_000, preallocateSegments: Bool = true
    ) {
        self.segmentBytes = segmentBytes
        self.maximumLogBytes = maximumLogBytes
        self.compressionLevel = compressionLevel
        self.maximumPendingEvents = maximumPendingEvents
        self.preallocateSegments = preallocateSegments
    }
}

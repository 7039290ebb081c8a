public import RelayCore

/// What a log directory still holds: its first and last sequence numbers and the time of its
/// first event. Read from the files alone (no lock), so it works beside a running server.
///
/// Segments every consumer has passed leave after the retention, so a log may no longer start at
/// sequence 1; `replay` says so instead of replaying nothing in silence.
public struct LogExtent: Sendable, Hashable {
    /// The first sequence number kept, or `nil` for an empty log.
    public var firstSequence: UInt64?
    /// The last sequence number kept, or `nil` for an empty log.
    public var lastSequence: UInt64?
    /// The event time of the first event kept.
    public var firstEventTime: EventTime?

    /// An empty log's extent; a store sets the fields as it finds them.
    public init() {}

    /// Whether the log still holds sequence 1 (nothing was ever deleted), or is empty.
    public var startsAtOne: Bool { (firstSequence ?? 1) == 1 }

    /// "sequences 1201 to 300000 (the first at 2026-11-22T00:00:00.000Z)", or "no event".
    public var description: String {
        guard let first = firstSequence, let last = lastSequence else { return "no event" }
        return "sequences \(first) to \(last)" + (firstEventTime.map { " (the first at \($0.rfc3339))" } ?? "")
    }

    /// The first event at or after `sequence` and below `limit` (one frame decoded), or `nil`.
    ///
    /// - Throws: ``LogError`` when a segment cannot be read, or its frame is encrypted with a key
    ///   `keys` lack.
    public static func firstEvent(
        walDirectory: String, archiveDirectory: String? = nil, fileSystem: any FileSystem = PosixFileSystem(), from sequence: UInt64,
        below limit: UInt64 = .max, keys: LogKeyRing? = nil
    ) throws(LogError) -> SequencedEvent? {
        var reader = LogReader(walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem, from: sequence, keys: keys)
        defer { reader.close() }
        return try reader.read(maximumEvents: 1, below: limit).events.first
    }

    /// Reads the extent of the log in `walDirectory` (with an archive's segments filling in those
    /// the log no longer has): the first event from the oldest segment, the last sequence from
    /// the frame headers of the newest segment holding a frame.
    ///
    /// - Throws: ``LogError`` when the directory or a segment cannot be read, or the first frame is
    ///   encrypted with a key `keys` lack.
    public static func read(
        walDirectory: String, archiveDirectory: String? = nil, fileSystem: any FileSystem = PosixFileSystem(), keys: LogKeyRing? = nil
    ) throws(LogError) -> LogExtent {
        let listing: SegmentListing
        do {
            listing = try SegmentListing.list(walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem)
        } catch {
            guard error.errno == LogLayout.noSuchFileErrno else { throw .fileSystem(error, context: "listing \(error.path)") }
            return LogExtent()
        }
        let starts = listing.starts
        guard let oldest = starts.first else { return LogExtent() }
        var extent = LogExtent()
        if let first = try firstEvent(
            walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem, from: oldest, keys: keys)
        {
            extent.firstSequence = first.sequence
            extent.firstEventTime = first.event.time
        }
        // The last sequence from frame headers alone (CRC-checked, not decompressed): the newest
        // segment with a frame ends the log; frames at or past the next segment's start were
        // superseded by it and do not count.
        for (index, start) in starts.enumerated().reversed() {
            let boundary = index + 1 < starts.count ? starts[index + 1] : UInt64.max
            let path = listing.path(of: start, walDirectory: walDirectory, archiveDirectory: archiveDirectory)
            do {
                let handle = try fileSystem.open(path, create: false)
                defer { handle.close() }
                var walker = try FrameWalker(handle: handle)
                walking: while true {
                    switch try walker.next() {
                    case .frame(let frame, _, _):
                        if frame.firstSequence < boundary {
                            extent.lastSequence = max(extent.lastSequence ?? 0, min(frame.endSequence, boundary) - 1)
                        }
                    case .damaged: continue
                    case .damagedTail, .end: break walking
                    }
                }
            } catch {
                throw .fileSystem(error, context: "reading \(path)")
            }
            if extent.lastSequence != nil { break }
        }
        return extent
    }
}

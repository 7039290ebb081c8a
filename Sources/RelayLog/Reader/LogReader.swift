public import Logging
public import RelayCore

/// Reads events from the log in sequence order, from any position, across segments.
///
/// A reader is a plain value owned by one consumer. It reads only what is on disk; a consumer in
/// the same process as the writer passes ``WriteAheadLog/durableSequence`` as the limit so it
/// never sees a frame that is not yet durable. Damage (a corrupt frame, a torn tail in a sealed
/// segment) is skipped and reported in ``LogReadBatch/damage``; reading goes on after it.
public struct LogReader: Sendable {
    /// The log directory being read.
    public let walDirectory: String
    /// An archive of segments read where the log has none of that name (``SegmentArchive``).
    public let archiveDirectory: String?
    let fileSystem: any FileSystem
    /// The log's decoder shared by its consumers (readers the log makes), or `nil` for a reader of its own.
    let sharedDecoder: SharedFrameDecoder?
    /// Where a reader of its own reports damage; a shared one reports through ``sharedDecoder``.
    let damageLogger: Logger?
    /// The keys that open encrypted frames; without the key a frame names, reading stops there
    /// with ``LogError/unreadableFrame(_:segment:offset:)``.
    public let keys: LogKeyRing?
    /// The sequence number of the next event this reader returns (or the first after it, if that
    /// one is missing from the log).
    public private(set) var position: UInt64
    /// The registrations being erased, handed out as erased entries (``ErasureMask``): the log's,
    /// or, for a reader of its own, loaded from the unfinished erasures' plans at its first read.
    private var erasures: ErasureMask?

    private var segments: [UInt64] = []
    private var segmentIndex = 0
    private var walker: FrameWalker?
    private var buffered: [SequencedEvent] = []
    private var bufferedIndex = 0

    /// A reader of the log in `walDirectory` that starts at sequence `position`; with an
    /// `archiveDirectory`, the archive's segments fill in those the log no longer has (a
    /// segment in both is read from the log). With a `damageLogger`, each damage it passes over
    /// is logged there too (a consumer of an open log gets its reader from the log instead, which
    /// reports damage once for all its consumers). `keys` open encrypted frames.
    public init(
        walDirectory: String, archiveDirectory: String? = nil, fileSystem: any FileSystem = PosixFileSystem(), from position: UInt64,
        keys: LogKeyRing? = nil, damageLogger: Logger? = nil
    ) {
        self.init(
            walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem, from: position, keys: keys,
            sharedDecoder: nil, damageLogger: damageLogger)
    }

    /// A reader that decodes through `sharedDecoder` (the log's, for its consumers).
    init(
        walDirectory: String, archiveDirectory: String?, fileSystem: any FileSystem, from position: UInt64, keys: LogKeyRing?,
        sharedDecoder: SharedFrameDecoder?, damageLogger: Logger?, erasures: ErasureMask? = nil
    ) {
        self.erasures = erasures
        self.keys = keys
        self.walDirectory = walDirectory
        self.archiveDirectory = archiveDirectory
        self.fileSystem = fileSystem
        self.position = max(position, 1)
        self.sharedDecoder = sharedDecoder
        self.damageLogger = damageLogger
    }

    /// The last listing: which segments are read from the archive (the log has none of that name).
    private var listing = SegmentListing(starts: [], archivedStarts: [])

    /// Reads up to `maximumEvents` events whose sequence numbers are below `limit`.
    ///
    /// Returns fewer (possibly none) when the log holds no more yet; call again later to tail it.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` at an encrypted frame whose key
    ///   the reader lacks, when it read no event before it (a batch ends before such a frame; its
    ///   position stays there), ``LogError/fileSystem(_:context:)``
    ///   when a segment cannot be read.
    public mutating func read(maximumEvents: Int, below limit: UInt64 = .max) throws(LogError) -> LogReadBatch {
        var batch = LogReadBatch()
        while batch.events.count < maximumEvents, position < limit {
            if bufferedIndex < buffered.count {
                let take = min(buffered.count - bufferedIndex, maximumEvents - batch.events.count)
                for event in buffered[bufferedIndex..<(bufferedIndex + take)] where event.sequence < limit {
                    batch.events.append(event)
                    position = event.sequence + 1
                }
                bufferedIndex += take
                if let last = batch.events.last, last.sequence + 1 >= limit { break }
                continue
            }
            do {
                guard try loadNextFrame(into: &batch) else { break }
            } catch {
                // Hand over what was read before the frame it cannot open (the position has passed
                // those events); the next call stops at that frame again.
                guard case .unreadableFrame = error, !batch.events.isEmpty else { throw error }
                break
            }
        }
        batch.position = position
        if erasures == nil { erasures = ErasureMask.pending(walDirectory: walDirectory, fileSystem: fileSystem) }
        erasures?.apply(to: &batch.events)
        return batch
    }

    /// Decodes the next frame holding events at or after `position` into the buffer; `false` at the end of the log.
    private mutating func loadNextFrame(into batch: inout LogReadBatch) throws(LogError) -> Bool {
        do {
            return try walkToNextFrame(into: &batch)
        } catch {
            switch error {
            case .file(let failure): throw .fileSystem(failure, context: "reading the log at sequence \(position)")
            case .log(let failure): throw failure
            }
        }
    }

    /// What stops ``walkToNextFrame(into:)``.
    private enum LoadFailure: Error {
        case file(FileSystemError)
        case log(LogError)
    }

    /// `body`'s result, its file-system error as a ``LoadFailure``.
    private static func files<T>(_ body: () throws(FileSystemError) -> T) throws(LoadFailure) -> T {
        do {
            return try body()
        } catch {
            throw .file(error)
        }
    }

    private mutating func walkToNextFrame(into batch: inout LogReadBatch) throws(LoadFailure) -> Bool {
        while true {
            if walker == nil {
                guard try Self.files({ () throws(FileSystemError) in try openSegment() }) else { return false }
            }
            guard var current = walker else { return false }
            let name = SegmentHeader.fileName(firstSequence: segments[segmentIndex])
            let nextSegmentStart = segmentIndex + 1 < segments.count ? segments[segmentIndex + 1] : nil
            let step = try Self.files { () throws(FileSystemError) in try current.next() }
            walker = current
            switch step {
            case .frame(let header, let offset, let stored):
                if let boundary = nextSegmentStart, header.firstSequence >= boundary {
                    // Written before an fdatasync failure, never acknowledged, rewritten in the next segment.
                    record(
                        LogDamage(
                            kind: .superseded, segment: name, range: offset..<(offset + Int64(header.frameSize)),
                            reason: "frame \(header.firstSequence) is superseded by segment \(boundary)"), in: &batch)
                    continue
                }
                guard header.endSequence > position else { continue }
                let events: [Event]
                do {
                    let keys = self.keys
                    let decode = { () throws(FrameDecodingError) -> [Event] in
                        try stored.withUnsafeBufferPointer { buffer throws(FrameDecodingError) in
                            try Frame.decodeEvents(header, stored: buffer, keys: keys)
                        }
                    }
                    if let sharedDecoder {
                        events = try sharedDecoder.events(segment: segments[segmentIndex], offset: offset, header: header, decode: decode)
                    } else {
                        events = try decode()
                    }
                } catch {
                    switch error {
                    case .encryption(let failure):
                        // Not damage: without its key nothing after it may be read either, or a
                        // consumer would pass events it never saw. Read it again next time.
                        walker?.seek(to: offset)
                        throw .log(.unreadableFrame(failure, segment: name, offset: offset))
                    case .events(let failure):
                        record(
                            LogDamage(
                                kind: .undecodable, segment: name, range: offset..<(offset + Int64(header.frameSize)), reason: failure.description),
                            in: &batch)
                        continue
                    }
                }
                buffered = []
                buffered.reserveCapacity(events.count)
                for (index, event) in events.enumerated() {
                    let sequence = header.firstSequence + UInt64(index)
                    if sequence >= position { buffered.append(SequencedEvent(sequence: sequence, event: event)) }
                }
                bufferedIndex = 0
                return true
            case .damaged(let range, let reason):
                record(LogDamage(kind: .corruptFrame, segment: name, range: range, reason: reason), in: &batch)
            case .damagedTail(let range, let reason):
                if nextSegmentStart == nil {
                    // The end of the newest segment: perhaps a frame still being written. Look again next time.
                    walker?.seek(to: range.lowerBound)
                    if try Self.files({ () throws(FileSystemError) in try hasNewerSegment() }) { continue }
                    return false
                }
                record(LogDamage(kind: .tornTail, segment: name, range: range, reason: reason), in: &batch)
                try Self.files { () throws(FileSystemError) in try advanceSegment() }
            case .end:
                if nextSegmentStart == nil {
                    // A newer segment means this one is complete: re-walk with its final size
                    // (frames may have landed just before the roll) before moving on.
                    if try Self.files({ () throws(FileSystemError) in try hasNewerSegment() }) { continue }
                    if walker?.hasMoreBytes == true { continue }
                    return false
                }
                try Self.files { () throws(FileSystemError) in try advanceSegment() }
            }
        }
    }

    /// Adds `damage` to the batch and reports it: once for all the log's consumers, or to this
    /// reader's own logger.
    private func record(_ damage: LogDamage, in batch: inout LogReadBatch) {
        batch.damage.append(damage)
        if let sharedDecoder {
            sharedDecoder.report(damage)
        } else if let damageLogger, damage.kind != .superseded {
            SharedFrameDecoder.log(damage, to: damageLogger)
        }
    }

    private mutating func listSegments() throws(FileSystemError) -> [UInt64] {
        listing = try SegmentListing.list(walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem)
        return listing.starts
    }

    /// Opens the segment holding `position` (the last one starting at or before it).
    private mutating func openSegment() throws(FileSystemError) -> Bool {
        segments = try listSegments()
        guard !segments.isEmpty else { return false }
        segmentIndex = segments.lastIndex(where: { $0 <= position }) ?? 0
        return try openCurrent()
    }

    private mutating func openCurrent() throws(FileSystemError) -> Bool {
        let handle: any FileHandle
        do {
            handle = try fileSystem.open(
                listing.path(of: segments[segmentIndex], walDirectory: walDirectory, archiveDirectory: archiveDirectory), create: false)
        } catch  where error.errno == LogLayout.noSuchFileErrno {
            // Deleted after its consumers passed it: list again and carry on from the next one,
            // or from the archive's copy when it was archived as it left.
            walker = nil
            let missing = segments[segmentIndex]
            let wasArchived = listing.archivedStarts.contains(missing)
            segments = try listSegments()
            if !wasArchived, listing.archivedStarts.contains(missing), let again = segments.firstIndex(of: missing) {
                segmentIndex = again
                return try openCurrent()
            }
            guard let next = segments.firstIndex(where: { $0 > missing }) else { return false }
            segmentIndex = next
            return try openCurrent()
        }
        walker = try FrameWalker(handle: handle)
        return true
    }

    private mutating func hasNewerSegment() throws(FileSystemError) -> Bool {
        let current = segments[segmentIndex]
        let fresh = try listSegments()
        guard fresh.contains(where: { $0 > current }) else {
            try walker?.refreshSize()
            return false
        }
        segments = fresh
        segmentIndex = fresh.firstIndex(of: current) ?? 0
        try walker?.refreshSize()
        return true
    }

    private mutating func advanceSegment() throws(FileSystemError) {
        walker?.handle.close()
        walker = nil
        segmentIndex += 1
        guard segmentIndex < segments.count else { return }
        _ = try openCurrent()
    }

    /// Closes the open segment.
    public mutating func close() {
        walker?.handle.close()
        walker = nil
    }
}

/// What one ``LogReader/read(maximumEvents:below:)`` call returned.
public struct LogReadBatch: Sendable {
    /// Events in sequence order.
    public var events: [SequencedEvent] = []
    /// Damage skipped on the way.
    public var damage: [LogDamage] = []
    /// The reader's position after the batch (the next sequence it will return).
    public var position: UInt64 = 0

    /// An empty batch (a reader fills it).
    package init() {}
}

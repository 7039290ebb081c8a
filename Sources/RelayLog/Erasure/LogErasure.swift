public import RelayCore

/// The log's part of an erasure (`campaign-relay erase`): finding a person's registrations in the
/// segments of the log and its archives, and rewriting those segments with each of them replaced
/// by an ``RelayCore/ErasedEntry``.
///
/// A rewritten frame keeps its first sequence number and event count; only the erased events'
/// bytes change, and the frame is compressed anew and, if it was encrypted, sealed anew with the
/// newest key (``FrameSealer``: a fresh salt, so no nonce repeats). The segment is replaced as
/// ``SegmentRewriter`` does it, holding ``SegmentRewriteLock`` in the log's directory so that the
/// retention of a running server neither deletes nor archives it meanwhile. Running the rewrite
/// again finds the entries erased already and writes nothing: a crash midway is finished by
/// running it again from the erasure's ``ErasurePlan``.
public enum LogErasure {
    /// A registration found for an erasure.
    public struct Match: Sendable, Hashable {
        /// Its sequence number.
        public var sequence: UInt64
        /// The registration.
        public var registration: Registration
    }

    /// What rewriting one directory of segments did.
    public struct Rewrite: Sendable, Hashable, Codable {
        /// The directory (the log's `wal/` or an archive).
        public var directory: String
        /// Registrations replaced by erased entries.
        public var entriesErased = 0
        /// Segment files rewritten.
        public var segmentsRewritten = 0

        /// An empty report.
        public init(directory: String) {
            self.directory = directory
        }
    }

    /// The registrations of `directory`'s segments, below `boundary`, that `selector` matches,
    /// in sequence order.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` at a frame whose key is not in
    ///   `keys` (an erasure cannot tell what it holds), ``LogError/fileSystem(_:context:)``.
    public static func find(
        _ selector: ErasureSelector, in directory: String, below boundary: UInt64, keys: LogKeyRing?, fileSystem: any FileSystem = PosixFileSystem()
    ) throws(LogError) -> [Match] {
        var matches: [Match] = []
        for name in try segments(in: directory, below: boundary, fileSystem: fileSystem) {
            _ = try SegmentRewriter.rewrite(name: name, directory: directory, fileSystem: fileSystem) { (header, offset, stored) throws(LogError) in
                matches += try Self.matches(selector, header: header, stored: stored, below: boundary, keys: keys, place: name, offset: offset)
                return nil
            }
        }
        return matches
    }

    /// Replaces the events of `sequences` in the segments of `directory` by erased entries,
    /// holding the rewrite lock of the log in `walDirectory` for each segment rewritten.
    /// `compressionLevel` recompresses the frames changed.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` when a frame holding one of them
    ///   cannot be opened with `keys` (segments before it are rewritten; run it again with the
    ///   key), ``LogError/sealingFailed(_:)``, ``LogError/fileSystem(_:context:)``.
    public static func erase(
        _ sequences: Set<UInt64>, in directory: String, walDirectory: String, keys: LogKeyRing?, compressionLevel: Int32 = 1,
        fileSystem: any FileSystem = PosixFileSystem()
    ) throws(LogError) -> Rewrite {
        var report = Rewrite(directory: directory)
        // An archive the retention has not made yet holds nothing.
        guard let highest = sequences.max(), fileSystem.exists(directory) else { return report }
        let starts = try SegmentRewriter.segmentStarts(in: directory, fileSystem: fileSystem)
        for (index, start) in starts.enumerated() where start <= highest {
            let end = index + 1 < starts.count ? starts[index + 1] : UInt64.max
            guard sequences.contains(where: { $0 >= start && $0 < end }) else { continue }
            let name = SegmentHeader.fileName(firstSequence: start)
            var erased = 0
            let outcome = try SegmentRewriteLock.holding(walDirectory: walDirectory, fileSystem: fileSystem) { () throws(LogError) in
                try SegmentRewriter.rewrite(name: name, directory: directory, fileSystem: fileSystem) { (header, offset, stored) throws(LogError) in
                    guard
                        let rewritten = try Self.rewritten(
                            header: header, stored: stored, erasing: sequences, keys: keys, compressionLevel: compressionLevel, place: name,
                            offset: offset)
                    else { return nil }
                    erased += rewritten.erased
                    return rewritten.bytes
                }
            }
            if let outcome, outcome.rewritten {
                report.segmentsRewritten += 1
                report.entriesErased += erased
            }
        }
        return report
    }

    /// The registrations of a frame (its `header` and `stored` payload) below `boundary` that
    /// `selector` matches.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` when its key is not in `keys`.
    static func matches(
        _ selector: ErasureSelector, header: FrameHeader, stored: [UInt8], below boundary: UInt64, keys: LogKeyRing?, place: String, offset: Int64
    ) throws(LogError) -> [Match] {
        guard header.firstSequence < boundary else { return [] }
        var matches: [Match] = []
        let events = try decode(header, stored: stored, keys: keys, segment: place, offset: offset)
        for (index, event) in events.enumerated() {
            let sequence = header.firstSequence + UInt64(index)
            guard sequence < boundary, case .registration(let registration) = event, selector.matches(registration) else { continue }
            matches.append(Match(sequence: sequence, registration: registration))
        }
        return matches
    }

    /// A frame (its `header` and `stored` payload) with the registrations of `sequences` replaced
    /// by erased entries, compressed anew (a frame stored uncompressed stays so) and, when it
    /// was sealed, sealed anew with the newest key; `nil` when none of them is in it.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` when its key is not in `keys`,
    ///   ``LogError/sealingFailed(_:)``.
    static func rewritten(
        header: FrameHeader, stored: [UInt8], erasing sequences: Set<UInt64>, keys: LogKeyRing?, compressionLevel: Int32, place: String,
        offset: Int64
    ) throws(LogError) -> (bytes: [UInt8], erased: Int)? {
        let frame = header.firstSequence..<(header.firstSequence + UInt64(header.eventCount))
        guard sequences.contains(where: frame.contains) else { return nil }
        var events = try decode(header, stored: stored, keys: keys, segment: place, offset: offset)
        var changed = 0
        for index in events.indices where sequences.contains(header.firstSequence + UInt64(index)) {
            guard case .registration = events[index] else { continue }
            events[index] = .erased(ErasedEntry(erasing: events[index]))
            changed += 1
        }
        guard changed > 0 else { return nil }
        let sealer: FrameSealer?
        if header.isEncrypted {
            guard let keys else { return nil }
            sealer = FrameSealer(key: keys.newest)
        } else {
            sealer = nil
        }
        do throws(FrameEncryptionError) {
            let level = header.codec == .stored ? 0 : compressionLevel
            return (try Frame.encode(events, firstSequence: header.firstSequence, compressionLevel: level, sealer: sealer), changed)
        } catch {
            throw .sealingFailed(error)
        }
    }

    /// The registrations `selector` matches in a frame kept as a record (a row of a stream in
    /// PostgreSQL, named `place`), below `boundary`; none in a damaged record.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` when its key is not in `keys`.
    package static func matches(
        _ selector: ErasureSelector, in record: FrameRecord, below boundary: UInt64, keys: LogKeyRing?, place: String
    ) throws(LogError) -> [Match] {
        guard let (header, stored) = record.checkedFrame else { return [] }
        return try matches(selector, header: header, stored: stored, below: boundary, keys: keys, place: place, offset: 0)
    }

    /// A frame kept as a record with the registrations of `sequences` erased (``rewritten(header:stored:erasing:keys:compressionLevel:place:offset:)``);
    /// `nil` when none of them is in it, or the record is damaged.
    ///
    /// - Throws: as ``rewritten(header:stored:erasing:keys:compressionLevel:place:offset:)``.
    package static func rewritten(
        _ record: FrameRecord, erasing sequences: Set<UInt64>, keys: LogKeyRing?, compressionLevel: Int32, place: String
    ) throws(LogError) -> (record: FrameRecord, erased: Int)? {
        guard let (header, stored) = record.checkedFrame,
            let rewritten = try rewritten(
                header: header, stored: stored, erasing: sequences, keys: keys, compressionLevel: compressionLevel, place: place, offset: 0)
        else { return nil }
        return (FrameRecord(firstSequence: record.firstSequence, eventCount: record.eventCount, bytes: rewritten.bytes), rewritten.erased)
    }

    /// The segment files of `directory` that may hold events below `boundary`.
    private static func segments(in directory: String, below boundary: UInt64, fileSystem: any FileSystem) throws(LogError) -> [String] {
        guard fileSystem.exists(directory) else { return [] }
        return try SegmentRewriter.segmentStarts(in: directory, fileSystem: fileSystem).filter { $0 < boundary }.map(
            SegmentHeader.fileName(firstSequence:))
    }

    /// The events of a frame; a frame whose events do not decode (damage its CRC missed) has none
    /// that can be read, by an erasure or anyone.
    private static func decode(_ header: FrameHeader, stored: [UInt8], keys: LogKeyRing?, segment: String, offset: Int64) throws(LogError) -> [Event]
    {
        do {
            return try stored.withUnsafeBufferPointer { buffer throws(FrameDecodingError) in
                try Frame.decodeEvents(header, stored: buffer, keys: keys)
            }
        } catch {
            switch error {
            case .encryption(let failure): throw .unreadableFrame(failure, segment: segment, offset: offset)
            case .events: return []
            }
        }
    }
}

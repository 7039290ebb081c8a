/// `wal rekey`: rewrites segment files so that every frame is sealed with the newest key of a key
/// ring: frames in the clear are encrypted, frames of older keys are opened and sealed again.
///
/// Each segment is rewritten whole and crash-safely: its new bytes go to `<name>.wal.tmp` (which
/// the log removes on open, and an archive's readers ignore), are fdatasync'ed, renamed over the
/// segment and the directory is fsync'ed. A crash leaves either the old file or the new one, and
/// running the command again finishes the work. A segment whose frames are all sealed with the
/// newest key already is left as it is.
///
/// Beside a running server it rewrites only sealed segments (never the one being appended to), and
/// holds ``SegmentRewriteLock`` for each one, which the server's retention holds to archive or
/// delete one: a segment the server deletes meanwhile is skipped, never brought back. Readers
/// that have the old file open go on reading its old bytes (the same events); a reader opening it
/// afterwards reads the new ones. Sequence numbers, event counts, codecs and damaged ranges stay
/// as they were; only the payloads (and so the frames' offsets) change.
public enum LogRekey {
    /// What a rekey did to one directory of segments.
    public struct Report: Sendable, Hashable, Encodable {
        /// The directory rewritten (the log's `wal/` or an archive).
        public var directory: String
        /// Segment files rewritten.
        public var segmentsRewritten = 0
        /// Segment files whose frames were all sealed with the newest key already.
        public var segmentsCurrent = 0
        /// Segments deleted by the log's retention before their turn came.
        public var segmentsGone = 0
        /// The segment left alone because a server appends to it (rekey it once it is sealed).
        public var activeSegmentSkipped: String?
        /// Frames that were in the clear and are now encrypted.
        public var framesEncrypted = 0
        /// Frames that were sealed with an older key and are now sealed with the newest.
        public var framesResealed = 0
        /// Damaged ranges copied as they were (their bytes cannot be opened; readers skip them).
        public var damagedRangesKept = 0
        /// Bytes of the rewritten segments, after.
        public var bytesWritten: Int64 = 0
        /// The key every frame is now sealed with.
        public var keyId: String

        /// Creates an empty report.
        public init(directory: String, keyId: String) {
            self.directory = directory
            self.keyId = keyId
        }
    }

    /// The segments a rekey leaves alone, because a server may be appending to them.
    public enum ActiveSegment: Sendable, Hashable {
        /// None: no process appends (the rekey holds the log's lock, or the directory is an archive).
        case none
        /// The newest segment of the directory: a server appends to it.
        case newest
        /// Segments starting at or after this sequence: a server sealed its active segment at
        /// this boundary (`POST /v1/wal/seal`), so every segment below it is sealed for good.
        case startingAtOrAfter(UInt64)
    }

    /// Rewrites the segments in `directory` under the newest key of `keys`.
    ///
    /// `walDirectory` is the log's directory, whose ``SegmentRewriteLock`` is held for each segment
    /// (the same as `directory`, or the log an archive belongs to). The segments `active` names (a
    /// server may be appending to them) are left alone. `progress` is called after each segment
    /// with the report so far.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` when a frame's key is not in `keys`
    ///   (the segments before it are rewritten, that one and the rest are not),
    ///   ``LogError/fileSystem(_:context:)`` when a file cannot be read or written.
    public static func rekey(
        directory: String, walDirectory: String, keys: LogKeyRing, leaving active: ActiveSegment, fileSystem: any FileSystem = PosixFileSystem(),
        progress: (Report) -> Void = { _ in }
    ) throws(LogError) -> Report {
        var report = Report(directory: directory, keyId: keys.newest.id)
        var starts = try SegmentRewriter.segmentStarts(in: directory, fileSystem: fileSystem)
        switch active {
        case .none:
            break
        case .newest:
            if let newest = starts.popLast() { report.activeSegmentSkipped = SegmentHeader.fileName(firstSequence: newest) }
        case .startingAtOrAfter(let boundary):
            if let first = starts.first(where: { $0 >= boundary }) { report.activeSegmentSkipped = SegmentHeader.fileName(firstSequence: first) }
            starts.removeAll { $0 >= boundary }
        }
        for start in starts {
            let name = SegmentHeader.fileName(firstSequence: start)
            try SegmentRewriteLock.holding(walDirectory: walDirectory, fileSystem: fileSystem) { () throws(LogError) in
                try rewrite(name: name, directory: directory, keys: keys, fileSystem: fileSystem, report: &report)
            }
            progress(report)
        }
        return report
    }

    /// Rewrites one segment, if any of its frames is not sealed with the newest key.
    private static func rewrite(name: String, directory: String, keys: LogKeyRing, fileSystem: any FileSystem, report: inout Report) throws(LogError)
    {
        let sealer = FrameSealer(key: keys.newest)
        var encrypted = 0
        var sealedAgain = 0
        let outcome = try SegmentRewriter.rewrite(name: name, directory: directory, fileSystem: fileSystem) {
            (header, offset, stored) throws(LogError) -> [UInt8]? in
            guard let sealed = try resealed(header: header, stored: stored, keys: keys, sealer: sealer, place: name, offset: offset) else {
                return nil
            }
            if sealed.wasEncrypted { sealedAgain += 1 } else { encrypted += 1 }
            return sealed.bytes
        }
        guard let outcome else {
            report.segmentsGone += 1
            return
        }
        guard outcome.rewritten else {
            report.segmentsCurrent += 1
            return
        }
        report.segmentsRewritten += 1
        report.framesEncrypted += encrypted
        report.framesResealed += sealedAgain
        report.damagedRangesKept += outcome.damagedRanges
        report.bytesWritten += outcome.bytes
    }

    /// A frame (its `header` and `stored` payload) sealed with `sealer`'s key: opened first when it
    /// was sealed with an older key of `keys`; `nil` when it is sealed with that key already.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` when its key is not in `keys`,
    ///   ``LogError/sealingFailed(_:)``.
    static func resealed(
        header: FrameHeader, stored: [UInt8], keys: LogKeyRing, sealer: FrameSealer, place: String, offset: Int64
    ) throws(LogError) -> (bytes: [UInt8], wasEncrypted: Bool)? {
        if header.isEncrypted, FrameEnvelope.keyID(of: stored) == sealer.key.id { return nil }
        let inner: [UInt8]
        if header.isEncrypted {
            do throws(FrameEncryptionError) {
                inner = try stored.withUnsafeBufferPointer { buffer throws(FrameEncryptionError) in
                    try FrameEnvelope.open(buffer, header: header, keys: keys)
                }
            } catch {
                throw .unreadableFrame(error, segment: place, offset: offset)
            }
        } else {
            inner = stored
        }
        do throws(FrameEncryptionError) {
            return (try Frame.seal(inner, header: header, sealer: sealer), header.isEncrypted)
        } catch {
            throw .sealingFailed(error)
        }
    }

    /// A frame kept as a record (a row of a stream in PostgreSQL, named `place`) sealed with the
    /// newest key of `keys`; `nil` when it is sealed with it already, or damaged (left as it is,
    /// as a segment's damaged ranges are copied as they were).
    ///
    /// - Throws: as ``resealed(header:stored:keys:sealer:place:offset:)``.
    package static func resealed(_ record: FrameRecord, keys: LogKeyRing, place: String) throws(LogError) -> (
        record: FrameRecord, wasEncrypted: Bool
    )? {
        guard let (header, stored) = record.checkedFrame,
            let sealed = try resealed(header: header, stored: stored, keys: keys, sealer: FrameSealer(key: keys.newest), place: place, offset: 0)
        else { return nil }
        return (FrameRecord(firstSequence: record.firstSequence, eventCount: record.eventCount, bytes: sealed.bytes), sealed.wasEncrypted)
    }
}

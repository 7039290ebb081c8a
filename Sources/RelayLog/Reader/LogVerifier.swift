public import RelayCore

/// Checks every frame of every segment without changing anything (`campaign-relay wal verify`).
public enum LogVerifier {
    /// What a verification found.
    public struct Report: Sendable, Hashable {
        /// Segment files.
        public var segments = 0
        /// Valid frames.
        public var frames = 0
        /// Events in valid frames (superseded frames not counted).
        public var events = 0
        /// Bytes of all segment files holding headers, frames and damage.
        public var bytes: Int64 = 0
        /// Bytes of zeros after the data of segments: preallocated space not used yet.
        public var preallocatedBytes: Int64 = 0
        /// Damage found, in segment order.
        public var damage: [LogDamage] = []
        /// The first and last sequence numbers found, if any event was found.
        public var firstSequence: UInt64?
        /// See ``firstSequence``.
        public var lastSequence: UInt64?
        /// The event time of the first event found: with ``firstSequence``, the start of the range
        /// the log keeps (segments every consumer passed leave after the retention).
        public var firstEventTime: EventTime?
        /// Events missing between frames (lost with corrupt frames, or never acknowledged).
        public var missingSequences: UInt64 = 0
        /// The data directory's relay identity, when the caller looked it up (``RelayIdentity/read(dataDirectory:fileSystem:)``).
        public var identity: RelayIdentity?
        /// Valid frames that are encrypted (superseded ones not counted).
        public var encryptedFrames = 0
        /// Valid encrypted frames left unopened because no keys were given: their structure and
        /// CRCs were checked, their events counted from their headers, not decoded.
        public var unopenedFrames = 0
        /// How many valid frames each key id sealed (encrypted frames only).
        public var framesByKeyID: [String: Int] = [:]

        /// An empty report, filled in as frames are checked.
        public init() {}

        /// Damaged frames in the middle of segments.
        public var corruptFrames: Int { damage.count { $0.kind == .corruptFrame || $0.kind == .undecodable } }
        /// Damaged ends of segments.
        public var tornTails: Int { damage.count { $0.kind == .tornTail } }
        /// Frames replaced after an fdatasync failure.
        public var supersededFrames: Int { damage.count { $0.kind == .superseded } }
        /// Disk bytes per stored event (headers included).
        public var bytesPerEvent: Double { events == 0 ? 0 : Double(bytes) / Double(events) }
        /// Whether nothing is damaged.
        public var isClean: Bool { corruptFrames == 0 && tornTails == 0 }
    }

    /// Verifies the log in `walDirectory`: every header and payload CRC, and every payload decodes.
    ///
    /// Encrypted frames are opened with `keys` and decoded; without `keys` their structure and
    /// CRCs are still checked and their key ids counted (``Report/unopenedFrames``).
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` when `keys` are given and lack a
    ///   frame's key, or it does not open under it; ``LogError/fileSystem(_:context:)`` when a
    ///   segment cannot be read.
    public static func verify(walDirectory: String, fileSystem: any FileSystem = PosixFileSystem(), keys: LogKeyRing? = nil) throws(LogError)
        -> Report
    {
        var report = Report()
        let starts: [UInt64]
        do {
            starts = try fileSystem.listDirectory(walDirectory).compactMap(SegmentHeader.firstSequence(fromFileName:)).sorted()
        } catch {
            throw .fileSystem(error, context: "listing \(walDirectory)")
        }
        report.segments = starts.count
        var expected: UInt64?
        for (index, start) in starts.enumerated() {
            let name = SegmentHeader.fileName(firstSequence: start)
            let boundary = index + 1 < starts.count ? starts[index + 1] : nil
            var unreadable: LogError?
            do {
                let handle = try fileSystem.open("\(walDirectory)/\(name)", create: false)
                defer { handle.close() }
                let size = try handle.size()
                let header = try handle.read(at: 0, count: SegmentHeader.size)
                if SegmentHeader.decode(header) == nil {
                    report.damage.append(
                        LogDamage(
                            kind: .corruptFrame, segment: name, range: 0..<Int64(min(header.count, SegmentHeader.size)),
                            reason: "segment header damaged (the file name still places it)"))
                }
                var walker = try FrameWalker(handle: handle)
                var dataEnd = Int64(min(size, Int64(SegmentHeader.size)))
                defer {
                    report.bytes += dataEnd
                    report.preallocatedBytes += size - dataEnd
                }
                walking: while true {
                    switch try walker.next() {
                    case .frame(let frame, let offset, let stored):
                        let range = offset..<(offset + Int64(frame.frameSize))
                        dataEnd = range.upperBound
                        if let boundary, frame.firstSequence >= boundary {
                            report.damage.append(
                                LogDamage(kind: .superseded, segment: name, range: range, reason: "superseded by segment \(boundary)"))
                            continue
                        }
                        do {
                            try count(
                                frame, stored: stored, place: name, offset: offset, range: range, keys: keys, into: &report, expected: &expected)
                        } catch {
                            unreadable = error
                            break walking
                        }
                    case .damaged(let range, let reason):
                        dataEnd = range.upperBound
                        report.damage.append(LogDamage(kind: .corruptFrame, segment: name, range: range, reason: reason))
                    case .damagedTail(let range, let reason):
                        dataEnd = range.upperBound
                        report.damage.append(LogDamage(kind: .tornTail, segment: name, range: range, reason: reason))
                        break walking
                    case .end:
                        break walking
                    }
                }
            } catch {
                throw .fileSystem(error, context: "verifying segment \(name)")
            }
            if let unreadable { throw unreadable }
        }
        return report
    }

    /// Counts a valid frame (its `header` and `stored` payload, at `offset` of `place`, spanning
    /// `range`) into `report`: its key id, its events decoded (opened with `keys`; without them an
    /// encrypted frame is counted unopened), its sequences against `expected` (where the previous
    /// frame ended); a payload that does not decode is damage instead.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` when `keys` are given and lack
    ///   its key.
    static func count(
        _ header: FrameHeader, stored: [UInt8], place: String, offset: Int64, range: Range<Int64>, keys: LogKeyRing?, into report: inout Report,
        expected: inout UInt64?
    ) throws(LogError) {
        if header.isEncrypted {
            report.framesByKeyID[FrameEnvelope.keyID(of: stored) ?? "?", default: 0] += 1
            report.encryptedFrames += 1
        }
        if header.isEncrypted && keys == nil {
            report.unopenedFrames += 1
        } else {
            do {
                let events = try stored.withUnsafeBufferPointer { buffer throws(FrameDecodingError) in
                    try Frame.decodeEvents(header, stored: buffer, keys: keys)
                }
                if report.firstEventTime == nil, let first = events.first { report.firstEventTime = first.time }
            } catch {
                switch error {
                case .encryption(let failure): throw .unreadableFrame(failure, segment: place, offset: offset)
                case .events(let failure):
                    report.damage.append(LogDamage(kind: .undecodable, segment: place, range: range, reason: failure.description))
                    return
                }
            }
        }
        report.frames += 1
        report.events += Int(header.eventCount)
        if let expected, header.firstSequence > expected { report.missingSequences += header.firstSequence - expected }
        expected = header.endSequence
        if report.firstSequence == nil { report.firstSequence = header.firstSequence }
        report.lastSequence = header.endSequence - 1
    }
}

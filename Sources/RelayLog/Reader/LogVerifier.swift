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
                        if frame.isEncrypted {
                            let keyID = FrameEnvelope.keyID(of: stored) ?? "?"
                            report.framesByKeyID[keyID, default: 0] += 1
                            report.encryptedFrames += 1
                        }
                        if frame.isEncrypted && keys == nil {
                            report.unopenedFrames += 1
                        } else {
                            do {
                                let events = try stored.withUnsafeBufferPointer { buffer throws(FrameDecodingError) in
                                    try Frame.decodeEvents(frame, stored: buffer, keys: keys)
                                }
                                if report.firstEventTime == nil, let first = events.first { report.firstEventTime = first.time }
                            } catch {
                                switch error {
                                case .encryption(let failure):
                                    unreadable = .unreadableFrame(failure, segment: name, offset: offset)
                                    break walking
                                case .events(let failure):
                                    report.damage.append(LogDamage(kind: .undecodable, segment: name, range: range, reason: failure.description))
                                    continue
                                }
                            }
                        }
                        report.frames += 1
                        report.events += Int(frame.eventCount)
                        if let expected, frame.firstSequence > expected { report.missingSequences += frame.firstSequence - expected }
                        expected = frame.endSequence
                        if report.firstSequence == nil { report.firstSequence = frame.firstSequence }
                        report.lastSequence = frame.endSequence - 1
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
}

extension LogVerifier {
    /// Adds a frame kept as a record (a row of a stream in PostgreSQL, named `place`) to `report`,
    /// checked as a segment's frames are: its header, size and payload CRC, and its events
    /// decoded (opened with `keys`; without them an encrypted frame is counted unopened).
    /// `expected` is the sequence the previous record ended at, for the missing sequences.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` when `keys` are given and lack
    ///   the frame's key.
    package static func add(
        _ record: FrameRecord, place: String, keys: LogKeyRing?, to report: inout Report, expected: inout UInt64?
    ) throws(LogError) {
        let range = 0..<Int64(record.bytes.count)
        report.bytes += Int64(record.bytes.count)
        guard let (header, stored) = record.checkedFrame else {
            report.damage.append(
                LogDamage(
                    kind: .corruptFrame, segment: place, range: range,
                    reason: "the frame's header, its size or its payload CRC does not hold, or it disagrees with the row's columns"))
            return
        }
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
                case .encryption(let failure): throw .unreadableFrame(failure, segment: place, offset: 0)
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

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
        try count(header, stored: stored, place: place, offset: 0, range: range, keys: keys, into: &report, expected: &expected)
    }
}

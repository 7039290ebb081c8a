import NIOCore
import PostgresNIO
import RelayLog

extension FrameRecord {
    /// The frame records of a query's rows, whose columns are `first_sequence, event_count, frame`
    /// of `relay_log_frames` (in that order), in the rows' order.
    ///
    /// - Throws: PostgresNIO's error for a row that does not decode so.
    static func records(_ rows: PostgresRowSequence) async throws -> [FrameRecord] {
        var found: [FrameRecord] = []
        for try await (first, events, frame) in rows.decode((Int64, Int32, ByteBuffer).self) {
            found.append(FrameRecord(firstSequence: UInt64(bitPattern: first), eventCount: Int(events), bytes: Array(frame.readableBytesView)))
        }
        return found
    }
}

import NIOCore
import PostgresNIO
public import RelayLog

/// `wal verify --log-postgres-url`: checks every row of a relay's stream in PostgreSQL as
/// ``RelayLog/LogVerifier`` checks segment files (header and payload CRCs, sizes, the row's
/// columns against its header, and every payload decodes), without changing anything.
///
/// Its calls block on a connection of their own: run it on a thread made for blocking calls.
public enum PostgresLogVerifier {
    /// Rows read per query.
    private static let framesPerQuery: Int64 = 256

    /// The report of stream `stream` of the log database at `location`: its spans stand where a
    /// segment report counts segments, each damage names the row (`stream NAME at FIRST`).
    ///
    /// - Throws: ``RelayLog/LogError/unreadableFrame(_:segment:offset:)`` when `keys` are given and
    ///   lack a frame's key, ``RelayLog/LogError/storeUnavailable(_:)`` when the database fails.
    public static func verify(stream: String, location: PostgresLocation, keys: LogKeyRing?) throws(LogError) -> LogVerifier.Report {
        let link = PostgresLink(location: location, deadline: .seconds(60), logger: location.quietLogger)
        defer { Task { await link.close() } }
        var report = LogVerifier.Report()
        var expected: UInt64?
        var spans = Set<Int64>()
        var after: Int64 = -1
        let count = framesPerQuery
        while true {
            let from = after
            let rows: [(span: Int64, record: FrameRecord)]
            do {
                rows = try BlockingPostgres.wait {
                    try await link.run { connection, logger in
                        var found: [(span: Int64, record: FrameRecord)] = []
                        for try await (span, first, events, frame) in try await connection.query(
                            """
                            SELECT span, first_sequence, event_count, frame FROM relay_log_frames
                            WHERE stream = \(stream) AND first_sequence > \(from) ORDER BY first_sequence LIMIT \(count)
                            """, logger: logger
                        ).decode((Int64, Int64, Int32, ByteBuffer).self) {
                            found.append(
                                (
                                    span,
                                    FrameRecord(
                                        firstSequence: UInt64(bitPattern: first), eventCount: Int(events), bytes: Array(frame.readableBytesView))
                                ))
                        }
                        return found
                    }
                }
            } catch {
                throw .storeUnavailable("reading stream \(stream) from \(location) to verify it: \(error)")
            }
            for (span, record) in rows {
                spans.insert(span)
                try LogVerifier.add(record, place: "stream \(stream) at \(record.firstSequence)", keys: keys, to: &report, expected: &expected)
            }
            guard let last = rows.last, rows.count == Int(count) else { break }
            after = Int64(bitPattern: last.record.firstSequence)
        }
        report.segments = spans.count
        return report
    }
}

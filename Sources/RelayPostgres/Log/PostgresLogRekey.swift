import NIOCore
import PostgresNIO
public import RelayLog

/// `wal rekey --log-postgres-url`: seals every frame of a relay's stream in PostgreSQL with the
/// newest key of a key ring, as ``RelayLog/LogRekey`` does for segment files: frames in the clear
/// are encrypted, frames of older keys are opened and sealed again, frames under the newest key
/// and damaged frames are left as they are.
///
/// The rows are rewritten in place, 256 at a time in sequence order, each batch in one transaction
/// under row locks: appends (new rows) go on meanwhile, an interruption leaves whole batches
/// rewritten, and running it again finishes the rest. Frames appended while it runs are sealed
/// with the key the appending relay runs with: restart the relays with the new key file first.
///
/// Its calls block on a connection of their own: run it on a thread made for blocking calls.
public enum PostgresLogRekey {
    /// Rows read and rewritten per transaction.
    private static let framesPerTransaction: Int64 = 256

    /// Rewrites stream `stream` of the log database at `location` under the newest key of
    /// `keys`; `progress` is called after each batch with the report so far. The report names the
    /// stream as its directory and counts rows where a segment report counts segments.
    ///
    /// - Throws: ``RelayLog/LogError/unreadableFrame(_:segment:offset:)`` when a frame's key is not
    ///   in `keys` (the batches before it are rewritten), ``RelayLog/LogError/sealingFailed(_:)``,
    ///   ``RelayLog/LogError/storeUnavailable(_:)`` when the database fails (that batch is not).
    public static func rekey(
        stream: String, location: PostgresLocation, keys: LogKeyRing, progress: (LogRekey.Report) -> Void = { _ in }
    ) throws(LogError) -> LogRekey.Report {
        let place = "stream \(stream) in PostgreSQL"
        var report = LogRekey.Report(directory: place, keyId: keys.newest.id)
        let link = PostgresLink(location: location, deadline: .seconds(60), logger: location.quietLogger)
        defer { Task { await link.close() } }
        var after: Int64 = -1
        let count = framesPerTransaction
        while true {
            let from = after
            let batch: Result<Batch, LogError>
            do {
                batch = try BlockingPostgres.wait {
                    try await link.run { connection, logger in
                        _ = try await connection.query("BEGIN", logger: logger)
                        let records = try await FrameRecord.records(
                            connection.query(
                                """
                                SELECT first_sequence, event_count, frame FROM relay_log_frames
                                WHERE stream = \(stream) AND first_sequence > \(from) ORDER BY first_sequence LIMIT \(count) FOR UPDATE
                                """, logger: logger))
                        var done = Batch(read: records.count, last: records.last.map { Int64(bitPattern: $0.firstSequence) })
                        var changed: [FrameRecord] = []
                        do throws(LogError) {
                            for record in records {
                                guard record.checkedFrame != nil else {
                                    done.damaged += 1
                                    continue
                                }
                                guard let sealed = try LogRekey.resealed(record, keys: keys, place: "\(place) at \(record.firstSequence)") else {
                                    done.current += 1
                                    continue
                                }
                                changed.append(sealed.record)
                                if sealed.wasEncrypted { done.resealed += 1 } else { done.encrypted += 1 }
                                done.bytes += Int64(sealed.record.bytes.count)
                            }
                        } catch {
                            _ = try await connection.query("ROLLBACK", logger: logger)
                            return .failure(error)
                        }
                        for record in changed {
                            let (first, bytes) = (Int64(bitPattern: record.firstSequence), ByteBuffer(bytes: record.bytes))
                            _ = try await connection.query(
                                "UPDATE relay_log_frames SET frame = \(bytes) WHERE stream = \(stream) AND first_sequence = \(first)", logger: logger)
                        }
                        _ = try await connection.query("COMMIT", logger: logger)
                        return .success(done)
                    }
                }
            } catch {
                throw .storeUnavailable(
                    "rekeying stream \(stream) at \(location) (the rows after sequence \(max(from, 0)) are not rewritten): \(error)")
            }
            let done = try batch.get()
            report.framesEncrypted += done.encrypted
            report.framesResealed += done.resealed
            report.segmentsRewritten += done.encrypted + done.resealed
            report.segmentsCurrent += done.current
            report.damagedRangesKept += done.damaged
            report.bytesWritten += done.bytes
            progress(report)
            guard let last = done.last, done.read == Int(count) else { break }
            after = last
        }
        return report
    }

    /// What one transaction did.
    private struct Batch: Sendable {
        var read: Int
        var last: Int64?
        var encrypted = 0
        var resealed = 0
        var current = 0
        var damaged = 0
        var bytes: Int64 = 0
    }
}

import NIOCore
import PostgresNIO
public import RelayCore
public import RelayLog

/// The log's part of an erasure when the log is a stream in PostgreSQL (`--log-postgres-url`):
/// finding a person's registrations in the stream's rows, and rewriting the rows that hold them
/// with each replaced by an ``RelayCore/ErasedEntry``, in one transaction.
///
/// As in the segment files (``RelayLog/LogErasure``), a rewritten frame keeps its first sequence
/// number and event count, is compressed anew and, if it was sealed, sealed anew with the newest
/// key. The rows are changed in place under row locks: appends (other rows) go on meanwhile, a
/// retention pass that drops one of them waits for the transaction, and a failure rolls every
/// row back, so that running it again (from the erasure's plan) finishes it.
///
/// The stream is erased by the relay that holds its lease (`fence`): its own, or one it adopted.
/// The plan is stored, and the rows rewritten, only under that lease (checked in the same
/// transaction), since the lanes of whichever relay holds the lease are the ones that mask the
/// registrations meanwhile.
///
/// Its calls block on a connection of their own: run them on a thread made for blocking calls.
public struct PostgresLogErasure: Sendable {
    /// The stream (the relay's name, or the name of the stream adopted).
    public let stream: String
    /// Where the plans of the stream's unfinished erasures are kept (no personal data): beside
    /// the stream, so that whoever opens it next masks and finishes them.
    public let plans: PostgresErasurePlans
    let location: PostgresLocation
    let fence: StreamLeaseFence?
    /// Frames read per query while finding.
    private static let framesPerQuery: Int64 = 256

    /// The erasure part of stream `stream` of the log database at `location`, under `fence`'s
    /// lease of the stream (`nil`: a command that holds none).
    public init(stream: String, location: PostgresLocation, fence: StreamLeaseFence?) {
        self.stream = stream
        self.location = location
        self.fence = fence
        self.plans = PostgresErasurePlans(location: location, stream: stream, fence: fence)
    }

    /// `<data-dir>/erasure-plans`: where earlier builds kept the plans of a relay on the log in
    /// PostgreSQL; ``PostgresLog/open`` moves any found there beside the stream.
    public static func planDirectory(dataDirectory: String) -> String { dataDirectory + "/erasure-plans" }

    /// How reports name the place rewritten.
    public var place: String { "stream \(stream) in PostgreSQL" }

    /// The registrations of the stream below `boundary` that `selector` matches, in sequence order.
    ///
    /// - Throws: ``RelayLog/LogError/unreadableFrame(_:segment:offset:)`` at a frame whose key is
    ///   not in `keys`, ``RelayLog/LogError/storeUnavailable(_:)`` when the database cannot be read.
    public func find(_ selector: ErasureSelector, below boundary: UInt64, keys: LogKeyRing?) throws(LogError) -> [LogErasure.Match] {
        let link = PostgresLink(location: location, deadline: .seconds(60), logger: location.quietLogger)
        defer { Task { await link.close() } }
        var matches: [LogErasure.Match] = []
        var after: Int64 = -1
        let (stream, high, count) = (self.stream, Int64(bitPattern: min(boundary, UInt64(Int64.max))), Self.framesPerQuery)
        while true {
            let from = after
            let records: [FrameRecord]
            do {
                records = try BlockingPostgres.wait {
                    try await link.run { connection, logger in
                        try await FrameRecord.records(
                            connection.query(
                                """
                                SELECT first_sequence, event_count, frame FROM relay_log_frames
                                WHERE stream = \(stream) AND first_sequence > \(from) AND first_sequence < \(high)
                                ORDER BY first_sequence LIMIT \(count)
                                """, logger: logger))
                    }
                }
            } catch {
                throw .storeUnavailable("reading stream \(stream) for an erasure from \(location): \(error)")
            }
            for record in records {
                matches += try LogErasure.matches(selector, in: record, below: boundary, keys: keys, place: "\(place) at \(record.firstSequence)")
            }
            guard let last = records.last, records.count == Int(count) else { break }
            after = Int64(bitPattern: last.firstSequence)
        }
        return matches
    }

    /// Replaces the registrations of `sequences` in the stream by erased entries, in one
    /// transaction; `compressionLevel` recompresses the frames changed. The report's
    /// ``RelayLog/LogErasure/Rewrite/segmentsRewritten`` counts the rows rewritten.
    ///
    /// - Throws: ``RelayLog/LogError/unreadableFrame(_:segment:offset:)`` when a frame holding one
    ///   of them cannot be opened with `keys`, ``RelayLog/LogError/sealingFailed(_:)``,
    ///   ``RelayLog/LogError/storeUnavailable(_:)`` when the database fails (nothing is changed).
    public func erase(_ sequences: Set<UInt64>, keys: LogKeyRing?, compressionLevel: Int32) throws(LogError) -> LogErasure.Rewrite {
        var report = LogErasure.Rewrite(directory: place)
        guard let lowest = sequences.min(), let highest = sequences.max() else { return report }
        let link = PostgresLink(location: location, deadline: .seconds(60), logger: location.quietLogger)
        defer { Task { await link.close() } }
        let (stream, place) = (self.stream, self.place)
        let lease = fence.map { $0.current(for: stream) }
        if case .some(nil) = lease { throw Self.notHeld(stream) }
        let wanted = sequences.sorted().map { Int64(bitPattern: $0) }
        let (low, high) = (Int64(bitPattern: lowest), Int64(bitPattern: highest))
        // The rewrite is decided inside the transaction (rows locked), so the bytes replaced are
        // the bytes read; an error in it rolls everything back.
        let outcome: Result<(rows: Int, erased: Int), LogError>
        do {
            outcome = try BlockingPostgres.wait {
                try await link.run { connection, logger in
                    _ = try await connection.query("BEGIN", logger: logger)
                    if case .some(let lease?) = lease {
                        // The lease row is held (FOR SHARE) until COMMIT: no other relay takes the
                        // stream while its rows are rewritten.
                        var held = false
                        for try await _ in try await connection.query(
                            """
                            SELECT 1 FROM relay_log_leases
                            WHERE stream = \(stream) AND holder = \(lease.holder) AND token = \(lease.token) AND expires_at > now() FOR SHARE
                            """, logger: logger)
                        {
                            held = true
                        }
                        guard held else {
                            _ = try await connection.query("ROLLBACK", logger: logger)
                            return .failure(Self.notHeld(stream))
                        }
                    }
                    let records = try await FrameRecord.records(
                        connection.query(
                            """
                            SELECT first_sequence, event_count, frame FROM relay_log_frames f
                            WHERE stream = \(stream) AND first_sequence <= \(high) AND first_sequence + event_count > \(low)
                              AND EXISTS (SELECT 1 FROM unnest(\(wanted)::bigint[]) s(sequence)
                                          WHERE s.sequence >= f.first_sequence AND s.sequence < f.first_sequence + f.event_count)
                            ORDER BY first_sequence FOR UPDATE
                            """, logger: logger))
                    var changed: [FrameRecord] = []
                    var erased = 0
                    do throws(LogError) {
                        for record in records {
                            guard
                                let rewritten = try LogErasure.rewritten(
                                    record, erasing: sequences, keys: keys, compressionLevel: compressionLevel,
                                    place: "\(place) at \(record.firstSequence)")
                            else { continue }
                            changed.append(rewritten.record)
                            erased += rewritten.erased
                        }
                    } catch {
                        _ = try await connection.query("ROLLBACK", logger: logger)
                        return .failure(error)
                    }
                    for record in changed {
                        let first = Int64(bitPattern: record.firstSequence)
                        let bytes = ByteBuffer(bytes: record.bytes)
                        _ = try await connection.query(
                            "UPDATE relay_log_frames SET frame = \(bytes) WHERE stream = \(stream) AND first_sequence = \(first)", logger: logger)
                    }
                    _ = try await connection.query("COMMIT", logger: logger)
                    return .success((changed.count, erased))
                }
            }
        } catch {
            throw .storeUnavailable("rewriting stream \(stream) for an erasure at \(location) (nothing was changed; it is tried again): \(error)")
        }
        let done = try outcome.get()
        report.segmentsRewritten = done.rows
        report.entriesErased = done.erased
        return report
    }

    private static func notHeld(_ stream: String) -> LogError {
        .storeUnavailable(
            "stream \(stream) is forwarded by another relay now (this relay does not hold its lease); its rows were not rewritten, "
                + "and the relay that holds it finishes the erasure from its plan")
    }
}

import Logging
import NIOCore
import PostgresNIO
import RelayCore
import RelayLog

/// The log's second ``FrameStore``: frames as rows of `relay_log_frames` in PostgreSQL, one
/// stream per relay (docs/postgres-log.md).
///
/// A group commit is one INSERT of its frames (in the log's own format: docs/wal-format.md), and
/// the append returns only once that INSERT's commit has: with a synchronous standby, on two
/// machines. A failed or unconfirmed commit acknowledges nothing (``LogError/storeUnavailable(_:)``,
/// which ingest answers 503); the connection is dropped, and the next append connects to whichever
/// host is then the writable primary. That next append first looks whether the failed commit
/// landed after all: if so it fails once more, with the durable end past those events, which the
/// log then keeps (unacknowledged) and numbers after; no sequence number is used twice.
///
/// One process appends to a stream: opening it as a writer takes the stream's writer generation
/// (`relay_log_streams.writer`), and every INSERT checks it, under a share lock on the stream's
/// row, so that a second process opened under the same name (a frozen relay's replacement) fences
/// the first out rather than interleaving with it.
///
/// Frames are grouped in spans (about ``LogConfiguration/segmentBytes`` each) that the retention
/// drops whole, as it drops segment files.
actor PostgresFrameStore: FrameStore {
    /// The stream this store appends to (the relay's name).
    nonisolated let stream: String
    /// Where the database is.
    nonisolated let location: PostgresLocation
    /// The registrations being erased, which the store's readers hand out as erased entries.
    nonisolated let erasureMask: ErasureMask
    /// Encodes group commits into frame records, and opens them.
    private var codec: FrameRecordCodec
    private nonisolated let keysCodec: FrameRecordCodec
    private let link: PostgresLink
    private let logger: Logger
    /// A stream adopted from a relay that stopped, only read here: appends are refused.
    private let readOnly: Bool
    private let spanBytes: Int64
    private let wallClock: @Sendable () -> Int64
    private var durableEnd: UInt64
    private var spans: [FrameSpan]
    /// Each span's id in the table (`span`), by its first sequence number.
    private var spanIDs: [UInt64: Int64]
    private var nextSpanID: Int64
    /// Set after a commit that failed: the next append first looks whether it landed after all.
    private var recheckNext = true
    /// This process's writer generation of the stream (0 for a stream only read here).
    private let writer: Int64
    /// Set once another process took the stream's writer generation: appends fail for good.
    private var fencedOut = false

    init(
        stream: String, location: PostgresLocation, link: PostgresLink, configuration: LogConfiguration, opened: PostgresStreamExtent,
        readOnly: Bool, erasureMask: ErasureMask, logger: Logger, wallClock: @escaping @Sendable () -> Int64
    ) {
        self.stream = stream
        self.location = location
        self.link = link
        self.codec = FrameRecordCodec(configuration: configuration)
        self.keysCodec = codec
        self.readOnly = readOnly
        self.spanBytes = max(64 << 10, configuration.segmentBytes)
        self.durableEnd = opened.durableEnd
        self.writer = opened.writer
        self.spans = opened.spans.map(\.span)
        self.spanIDs = Dictionary(uniqueKeysWithValues: opened.spans.map { ($0.span.firstSequence, $0.id) })
        self.nextSpanID = (opened.spans.last?.id ?? 0) + 1
        self.erasureMask = erasureMask
        self.logger = logger
        self.wallClock = wallClock
    }

    var extent: FrameStoreExtent {
        let bytes = spans.reduce(Int64(0)) { $0 + $1.bytes }
        return FrameStoreExtent(durableEnd: durableEnd, spans: spans, dataBytes: bytes, diskBytes: bytes)
    }

    func append(_ group: FrameGroup, room: FrameRoom) async -> FrameAppendOutcome {
        let dropped = room.handedOff.isEmpty ? FrameDropReport() : await drop(room.handedOff)
        guard !readOnly else {
            return FrameAppendOutcome(
                result: .failure(.storeUnavailable("stream \(stream) is adopted here for forwarding only; its own relay appends to it")),
                dropped: dropped, extent: extent)
        }
        let encoded: (records: [FrameRecord], tenantBytes: [TenantName: Int64])
        do {
            encoded = try codec.encode(group)
        } catch {
            return FrameAppendOutcome(result: .failure(error), dropped: dropped, extent: extent)
        }
        if fencedOut {
            return FrameAppendOutcome(result: .failure(Self.fencedOutError(stream)), dropped: dropped, extent: extent)
        }
        if recheckNext {
            if let landed = await landedEnd(after: group.firstSequence) {
                return FrameAppendOutcome(result: .failure(landed), dropped: dropped, extent: extent)
            }
        }
        let bytes = encoded.records.reduce(0) { $0 + $1.bytes.count }
        // A new span once the newest is full (or there is none): the retention drops spans whole.
        let opensSpan = spans.last.map { $0.bytes > 0 && $0.bytes + Int64(bytes) > spanBytes } ?? true
        let spanID = opensSpan ? nextSpanID : (spans.last.flatMap { spanIDs[$0.firstSequence] } ?? nextSpanID)
        let (stream, writer, first) = (self.stream, self.writer, group.firstSequence)
        let records = encoded.records
        let started = ContinuousClock.now
        let inserted: Int
        do {
            inserted = try await link.run { connection, logger in
                // One statement, its own transaction: the frames, if this process still holds the
                // stream's writer generation (a share lock on the stream's row, which a second
                // process opening the stream must wait for).
                let rows = try await connection.query(
                    """
                    INSERT INTO relay_log_frames (stream, first_sequence, event_count, span, frame)
                    SELECT \(stream), f.* FROM unnest(\(records.map { Int64(bitPattern: $0.firstSequence) })::bigint[], \
                    \(records.map { Int32($0.eventCount) })::integer[], \(records.map { _ in spanID })::bigint[], \
                    \(records.map { ByteBuffer(bytes: $0.bytes) })::bytea[]) AS f
                    WHERE EXISTS (SELECT 1 FROM relay_log_streams WHERE stream = \(stream) AND writer = \(writer) FOR SHARE)
                    RETURNING 1
                    """, logger: logger)
                var count = 0
                for try await _ in rows { count += 1 }
                return count
            }
        } catch {
            recheckNext = true
            codec.renewAfterFailure()
            logger.warning("a commit to the log's database failed; nothing of it is acknowledged", metadata: ["error": "\(error)"])
            return FrameAppendOutcome(result: .failure(.storeUnavailable("\(error)")), dropped: dropped, extent: extent)
        }
        guard inserted == records.count else {
            fencedOut = true
            logger.error("\(Self.fencedOutError(stream))")
            return FrameAppendOutcome(result: .failure(Self.fencedOutError(stream)), dropped: dropped, extent: extent)
        }
        let synchronizeDuration = ContinuousClock.now - started
        recheckNext = false
        if opensSpan {
            spans.append(FrameSpan(firstSequence: first, bytes: 0, createdAtNanoseconds: wallClock()))
            spanIDs[first] = spanID
            nextSpanID = spanID + 1
        }
        spans[spans.count - 1].bytes += Int64(bytes)
        durableEnd = first + UInt64(group.eventCount)
        return FrameAppendOutcome(
            result: .success(
                FrameAppend(
                    durableEnd: durableEnd, bytes: bytes, frames: records.count, synchronizeDuration: synchronizeDuration,
                    tenantBytes: encoded.tenantBytes)),
            dropped: dropped, extent: extent)
    }

    private static func fencedOutError(_ stream: String) -> LogError {
        .storeUnavailable(
            "another process opened stream \(stream) as its writer (a relay started under the same --relay-name); this one appends no more: stop it")
    }

    /// After a failed commit: whether its frames (at or after `first`) landed after all. If so,
    /// the spans and the durable end are read again and the error to answer is returned (the
    /// outcome's extent then carries the new durable end); `nil` when they did not, or when the
    /// database cannot say (the INSERT that follows fails the same way, or succeeds).
    private func landedEnd(after first: UInt64) async -> LogError? {
        let stream = self.stream
        do {
            let found = try await link.run { connection, logger in
                try await PostgresStreamExtent.load(stream, newRelayID: "", readOnly: true, on: connection, logger: logger)
            }
            recheckNext = false
            guard found.durableEnd > first else { return nil }
            durableEnd = found.durableEnd
            spans = found.spans.map(\.span)
            spanIDs = Dictionary(uniqueKeysWithValues: found.spans.map { ($0.span.firstSequence, $0.id) })
            nextSpanID = max(nextSpanID, (found.spans.last?.id ?? 0) + 1)
            return .storeUnavailable(
                "events \(first)..<\(found.durableEnd) of a commit whose answer was lost are in the database after all; they are kept, unacknowledged, and the next commit is numbered after them"
            )
        } catch {
            return nil
        }
    }

    func dropFrames(_ spans: [FrameDrop]) async -> FrameDropOutcome {
        FrameDropOutcome(report: await drop(spans), extent: extent)
    }

    /// Deletes `items`' spans, oldest first, each only while it is still the oldest and not the
    /// one being appended to; stops at the first failure.
    private func drop(_ items: [FrameDrop]) async -> FrameDropReport {
        var report = FrameDropReport()
        for item in items {
            guard spans.count > 1, spans[0].firstSequence == item.segment.firstSequence, let id = spanIDs[item.segment.firstSequence] else {
                continue
            }
            let stream = self.stream
            do {
                try await link.run { connection, logger in
                    try await connection.query("DELETE FROM relay_log_frames WHERE stream = \(stream) AND span = \(id)", logger: logger)
                }
            } catch {
                report.failure = .storeUnavailable("dropping span \(id) of stream \(stream): \(error)")
                break
            }
            let span = spans.removeFirst()
            spanIDs[span.firstSequence] = nil
            report.removals.append(
                SegmentRemoval(
                    segment: "span-\(id)", firstSequence: span.firstSequence, bytes: span.bytes, sealedAtNanoseconds: item.sealedAtNanoseconds,
                    reason: item.reason, archived: false))
        }
        return report
    }

    nonisolated var keepsArchive: Bool { false }

    nonisolated func archive(_ spans: [FrameDrop]) async -> (archived: [FrameDrop], failure: LogError?) { (spans, nil) }

    nonisolated func readFrames(from sequence: UInt64, archiveDirectory: String?) -> any FrameReader {
        PostgresFrameReader(
            stream: stream, location: location, from: sequence, codec: keysCodec, erasureMask: erasureMask)
    }

    nonisolated func firstEvent(from sequence: UInt64, below limit: UInt64) throws(LogError) -> SequencedEvent? {
        var reader = PostgresFrameReader(
            stream: stream, location: location, from: sequence, codec: keysCodec, erasureMask: erasureMask)
        defer { reader.close() }
        return try reader.read(maximumEvents: 1, below: limit).events.first
    }

    /// Frames are rows no append writes again: nothing to seal.
    nonisolated func sealActive() {}

    func close() async {
        await link.close()
    }
}

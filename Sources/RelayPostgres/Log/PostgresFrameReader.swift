import NIOCore
import PostgresNIO
import RelayCore
import RelayLog

/// The reader of a stream kept in PostgreSQL (``PostgresFrameStore``): the rows of
/// `relay_log_frames` from a sequence number on, decoded as the segment files' reader decodes
/// frames, damage reported and passed over.
///
/// Its reads block on a connection of its own, made at the first read and dropped after a
/// failure (the next read connects again, to whichever host is then the writable primary): run
/// it on a thread made for blocking calls, as every ``FrameReader``.
struct PostgresFrameReader: FrameReader {
    /// Frames fetched per query.
    private static let framesPerQuery = 16

    let stream: String
    private let location: PostgresLocation
    private let codec: FrameRecordCodec
    private let erasureMask: ErasureMask
    private var link: PostgresLink?
    /// Events decoded and not yet returned.
    private var buffered: [SequencedEvent] = []
    private(set) var position: UInt64

    init(stream: String, location: PostgresLocation, from sequence: UInt64, codec: FrameRecordCodec, erasureMask: ErasureMask) {
        self.stream = stream
        self.location = location
        self.codec = codec
        self.erasureMask = erasureMask
        self.position = sequence
    }

    mutating func read(maximumEvents: Int, below limit: UInt64) throws(LogError) -> LogReadBatch {
        var batch = LogReadBatch()
        if buffered.isEmpty, position < limit { try fetch(below: limit, into: &batch) }
        let taken = buffered.prefix { $0.sequence < limit }.prefix(maximumEvents)
        batch.events = Array(taken)
        buffered.removeFirst(taken.count)
        if let last = batch.events.last { position = last.sequence + 1 }
        erasureMask.apply(to: &batch.events)
        batch.position = position
        return batch
    }

    /// Fetches the frames holding `position` and after (below `limit`) into ``buffered``.
    private mutating func fetch(below limit: UInt64, into batch: inout LogReadBatch) throws(LogError) {
        let link = self.link ?? PostgresLink(location: location, deadline: .seconds(10), logger: location.quietLogger)
        self.link = link
        let from = Int64(bitPattern: position)
        let high = Int64(bitPattern: min(limit, UInt64(Int64.max)))
        let (stream, count) = (self.stream, Self.framesPerQuery)
        let records: [FrameRecord]
        do {
            records = try BlockingPostgres.wait {
                try await link.run { connection, logger in
                    try await FrameRecord.records(
                        connection.query(
                            """
                            SELECT first_sequence, event_count, frame FROM relay_log_frames
                            WHERE stream = \(stream) AND first_sequence < \(high) AND first_sequence >= coalesce(
                                (SELECT max(first_sequence) FROM relay_log_frames WHERE stream = \(stream) AND first_sequence <= \(from)), \(from))
                            ORDER BY first_sequence LIMIT \(count)
                            """, logger: logger))
                }
            }
        } catch {
            throw .storeUnavailable("reading stream \(stream) from \(location): \(error)")
        }
        var next = position
        for record in records where record.firstSequence + UInt64(record.eventCount) > next {
            switch try codec.decode(record, place: "\(stream)/\(record.firstSequence)") {
            case .events(let events):
                buffered += events.filter { $0.sequence >= next }
                next = record.firstSequence + UInt64(record.eventCount)
            case .damaged(let damage):
                // Passed over once the events before it are returned, as a damaged frame in a
                // segment is: reading goes on after it.
                guard buffered.isEmpty else { return }
                batch.damage.append(damage)
                next = record.firstSequence + UInt64(record.eventCount)
                position = next
            }
        }
        // Frames dropped by the retention: reading starts at the first kept.
        if let first = buffered.first, first.sequence > position { position = first.sequence }
    }

    mutating func close() {
        guard let link else { return }
        self.link = nil
        Task { await link.close() }
    }
}

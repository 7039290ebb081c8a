import NIOCore
import PostgresNIO
import RelayCore
public import RelayLog

/// A relay's stream of the log kept in PostgreSQL, read by a command that has not opened it
/// (`replay --log-postgres-url`, `wal dump --log-postgres-url`): the rows of `relay_log_frames`, read as
/// ``PostgresFrameStore``'s own readers read them. It takes no lease, writes nothing and works
/// beside the relays appending to the database.
public enum PostgresStoredStream {
    /// Stream `stream` of the log database at `location`, opened with `keys`.
    ///
    /// - Throws: ``LogError/storeNotOpened(_:)`` when the database cannot be reached, holds no
    ///   relay log, or has no stream of that name (the message names those it has).
    public static func open(location: PostgresLocation, stream: String, keys: LogKeyRing?) async throws(LogError) -> StoredLog {
        try await requireStream(stream, in: location)
        let codec = FrameRecordCodec(keys: keys)
        return StoredLog(
            source: "stream \(stream) in PostgreSQL",
            reader: { position, _ in
                PostgresFrameReader(stream: stream, location: location, from: position, codec: codec, erasureMask: ErasureMask())
            },
            extent: { () throws(LogError) in try extent(of: stream, at: location, codec: codec) })
    }

    /// Fails unless the log database at `location` holds stream `stream`.
    ///
    /// - Throws: ``LogError/storeNotOpened(_:)`` when the database cannot be reached, holds no
    ///   relay log, or has no stream of that name (the message names those it has).
    public static func requireStream(_ stream: String, in location: PostgresLocation) async throws(LogError) {
        let names = try await streams(in: location)
        guard names.contains(stream) else {
            let held = names.isEmpty ? "it holds none yet" : "it holds " + names.map { "'\($0)'" }.joined(separator: ", ")
            throw .storeNotOpened(
                "the log database \(location) has no stream '\(stream)' (\(held)): give the --relay-name the relay was served under")
        }
    }

    /// The names of the streams the log database at `location` holds, sorted.
    ///
    /// - Throws: ``LogError/storeNotOpened(_:)`` when it cannot be reached or holds no relay log.
    public static func streams(in location: PostgresLocation) async throws(LogError) -> [String] {
        let link = PostgresLink(location: location, deadline: .seconds(10), logger: location.quietLogger)
        defer { Task { await link.close() } }
        do {
            return try await link.run { connection, logger in
                var exists = false
                for try await found in try await connection.query(
                    "SELECT to_regclass('relay_log_streams') IS NOT NULL", logger: logger
                ).decode(Bool.self) {
                    exists = found
                }
                guard exists else { return [String]() }
                var names: [String] = []
                for try await name in try await connection.query(
                    "SELECT stream FROM relay_log_streams ORDER BY stream", logger: logger
                ).decode(String.self) {
                    names.append(name)
                }
                return names
            }
        } catch {
            throw .storeNotOpened("reading the streams of the log database \(location): \(error)")
        }
    }

    /// The extent of `stream`: its first kept and last sequence numbers, and its first event's time.
    private static func extent(of stream: String, at location: PostgresLocation, codec: FrameRecordCodec) throws(LogError) -> LogExtent {
        let link = PostgresLink(location: location, deadline: .seconds(10), logger: location.quietLogger)
        defer { Task { await link.close() } }
        let bounds: (Int64, Int64)?
        do {
            bounds = try BlockingPostgres.wait {
                try await link.run { connection, logger in
                    var found: (Int64, Int64)?
                    for try await (first, end) in try await connection.query(
                        "SELECT min(first_sequence), max(first_sequence + event_count) FROM relay_log_frames WHERE stream = \(stream)",
                        logger: logger
                    ).decode((Int64?, Int64?).self) {
                        if let first, let end { found = (first, end) }
                    }
                    return found
                }
            }
        } catch {
            throw .storeUnavailable("reading the extent of stream \(stream) from \(location): \(error)")
        }
        guard let (first, end) = bounds, end > first else { return LogExtent() }
        var reader = PostgresFrameReader(
            stream: stream, location: location, from: UInt64(bitPattern: first), codec: codec, erasureMask: ErasureMask())
        defer { reader.close() }
        var extent = LogExtent()
        extent.lastSequence = UInt64(bitPattern: end) - 1
        // The first event, past any damaged frame at the start, as the files' extent finds it.
        while reader.position < UInt64(bitPattern: end) {
            let batch = try reader.read(maximumEvents: 1, below: UInt64(bitPattern: end))
            if let event = batch.events.first {
                extent.firstSequence = event.sequence
                extent.firstEventTime = event.event.time
                break
            }
            if batch.damage.isEmpty { break }
        }
        return extent
    }
}

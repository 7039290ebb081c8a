public import Logging
import NIOCore
import PostgresNIO
public import RelayCore
import RelayIO
public import RelayLog

/// Opens a ``RelayLog/WriteAheadLog`` whose frames are kept in PostgreSQL (`--log-postgres-url`),
/// one stream per relay, instead of segment files (docs/postgres-log.md).
///
/// Everything above the store is the same log: group commit, consumers and their cursors (here in
/// `relay_log_cursors`), tenants' shares, retention by span. What the data directory held for the
/// file log is in the database, so a relay can lose its disk and another can adopt its stream.
public enum PostgresLog {
    /// What opening found, besides the log.
    public struct Opened: Sendable {
        /// The log.
        public var log: WriteAheadLog
        /// Events stored in the stream when it opened, below ``RelayLog/WriteAheadLog/durableSequence``.
        public var storedEvents: UInt64
        /// This process's writer generation of the stream (0 when only reading).
        public var writer: Int64
    }

    /// How long opening a stream (making the tables when missing, reading the stream's extent)
    /// may wait for the database; an append waits 5 s at most.
    static let openDeadline: Duration = .seconds(30)

    /// Opens stream `stream` of the log database at `location` (making its tables and its row
    /// when missing) with `consumers` declared.
    ///
    /// - Parameters:
    ///   - newRelayID: the relay id a new stream is given (an existing stream keeps its own).
    ///   - fenced: consumers whose cursors move only under the stream's lease (the lanes).
    ///   - fence: the leases this process holds.
    ///   - readOnly: a stream adopted for forwarding: appends are refused.
    ///   - walDirectory: where the log's files would be; nothing durable is kept there.
    ///   - erasurePlans: where earlier builds kept this relay's unfinished erasures' plans
    ///     (``PostgresLogErasure/planDirectory(dataDirectory:)``): they are moved beside the stream,
    ///     whose plans are masked until finished.
    /// - Throws: ``LogError/storeNotOpened(_:)`` when the database cannot be reached or read.
    public static func open(
        location: PostgresLocation, stream: String, newRelayID: String, configuration: LogConfiguration, consumers: [LogConsumerDeclaration],
        fenced: Set<String>, fence: StreamLeaseFence, readOnly: Bool, walDirectory: String, erasurePlans: String? = nil, logger: Logger,
        wallClock: @escaping @Sendable () -> Int64 = SystemClock.wallNanoseconds
    ) async throws(LogError) -> Opened {
        // A commit waits for a synchronous standby; one that has not answered in 5 s is answered
        // 503 (nothing acknowledged) rather than holding the SDK's request longer. Finding a
        // writable host after a failover takes at most 5 s too, however many hosts the URL names.
        let link = PostgresLink(location: location, deadline: .seconds(5), connectDeadline: .seconds(5), logger: location.quietLogger)
        let found: PostgresStreamExtent
        do {
            // No request waits on the open: a server busy or just started (a loaded machine took
            // more than 5 s to create the schema on a fresh cluster) is given longer.
            found = try await link.run(deadline: Self.openDeadline) { connection, logger in
                try await PostgresLogSchema.create(on: connection, logger: logger)
                return try await PostgresStreamExtent.load(stream, newRelayID: newRelayID, readOnly: readOnly, on: connection, logger: logger)
            }
        } catch {
            await link.close()
            throw .storeNotOpened("opening stream \(stream): \(error)")
        }
        let decoder = SharedFrameDecoder(capacity: 0, logger: logger)
        // The registrations of an erasure not finished (its plan is beside the stream: this
        // relay's own, cut short by a stop, or the erasure of a relay that stopped for good, whose
        // stream is adopted here) stay masked in every reader of the stream here until it is
        // finished. Plans an earlier build left in the data directory are moved there first.
        let plans = PostgresErasurePlans(location: location, stream: stream, fence: nil)
        let erasures = ErasureMask()
        do {
            erasures.insert(
                plans: try await BlockingExecutor(name: "erasure-plans").run { () throws(LogError) -> [ErasurePlan] in
                    if let erasurePlans { movePlans(from: erasurePlans, to: plans, logger: logger) }
                    return try plans.pending(skippingUnreadable: true)
                })
        } catch {
            // Opening without the plans would hand their registrations out again.
            await link.close()
            throw .storeNotOpened("opening stream \(stream): its unfinished erasures could not be read: \(error)")
        }
        let store = PostgresFrameStore(
            stream: stream, location: location, link: link, configuration: configuration, opened: found, readOnly: readOnly,
            erasureMask: erasures, logger: logger, wallClock: wallClock)
        var report = RecoveryReport()
        report.nextSequence = found.durableEnd
        report.segments = found.spans.count
        let cursors = PostgresCursorKeeper(
            stream: stream, link: PostgresLink(location: location, logger: location.quietLogger), fenced: fenced, fence: fence)
        let identity = RelayIdentity(
            relayID: found.relayID,
            epochs: [RelayIdentity.Epoch(number: 1, firstSequence: 1, started: found.created, reason: "postgresql stream \(stream)")],
            directory: FileIdentity(device: 0, inode: 0))
        let opened = OpenedFrameStore(
            store: store, positions: found.cursors, cursors: cursors, report: report, identity: identity,
            change: found.isNew ? .created : .unchanged, erasures: erasures, extent: await store.extent, sharedDecoder: decoder)
        let log = try await WriteAheadLog.open(
            opened, walDirectory: walDirectory, configuration: configuration, consumers: consumers, logger: logger, wallClock: wallClock)
        return Opened(
            log: log, storedEvents: found.durableEnd - (found.spans.first?.span.firstSequence ?? found.durableEnd), writer: found.writer)
    }

    /// Moves the plans of `directory` (where earlier builds kept them) beside the stream; a plan
    /// that cannot be moved stays where it is and is tried again at the next open.
    private static func movePlans(from directory: String, to plans: PostgresErasurePlans, logger: Logger) {
        let files = ErasurePlanFiles(directory: directory)
        guard let found = try? files.pending(skippingUnreadable: true), !found.isEmpty else { return }
        for plan in found {
            do throws(LogError) {
                try plans.store(plan)
                try files.remove(plan)
                logger.notice("moved an unfinished erasure's plan beside the stream", metadata: ["erasure": "\(plan.id)", "from": "\(directory)"])
            } catch {
                logger.warning(
                    "could not move an unfinished erasure's plan beside the stream", metadata: ["erasure": "\(plan.id)", "error": "\(error)"])
            }
        }
    }
}

/// What a stream holds when its log opens: its row, its spans, its durable end, its cursors.
struct PostgresStreamExtent: Sendable {
    var relayID: String
    var created: String
    /// This process's writer generation (taken at open; 0 when only reading).
    var writer: Int64 = 0
    var isNew: Bool
    var durableEnd: UInt64
    var spans: [(id: Int64, span: FrameSpan)]
    var cursors: [String: UInt64]

    /// Reads (or, unless `readOnly`, makes) `stream`'s row and reads its frames' spans and cursors.
    static func load(
        _ stream: String, newRelayID: String, readOnly: Bool, on connection: PostgresConnection, logger: Logger
    ) async throws -> PostgresStreamExtent {
        var isNew = false
        if !readOnly {
            for try await _ in try await connection.query(
                """
                INSERT INTO relay_log_streams (stream, relay_id, alive_until) VALUES (\(stream), \(newRelayID), now() + interval '10 seconds')
                ON CONFLICT (stream) DO NOTHING RETURNING 1
                """, logger: logger)
            {
                isNew = true
            }
        }
        var row: (String, String)?
        for try await found in try await connection.query(
            "SELECT relay_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM relay_log_streams WHERE stream = \(stream)",
            logger: logger
        ).decode((String, String).self) {
            row = found
        }
        guard let (relayID, created) = row else { throw FleetError.database("the log database has no stream \(stream)") }
        var writer: Int64 = 0
        if !readOnly {
            // Taking the writer generation waits for the share lock of any INSERT under way by a
            // previous writer, whose later INSERTs then find the generation changed.
            for try await generation in try await connection.query(
                "UPDATE relay_log_streams SET writer = writer + 1 WHERE stream = \(stream) RETURNING writer", logger: logger
            ).decode(Int64.self) {
                writer = generation
            }
        }
        var spans: [(id: Int64, span: FrameSpan)] = []
        for try await (id, first, bytes, stored) in try await connection.query(
            """
            SELECT span, min(first_sequence), sum(octet_length(frame))::bigint, (extract(epoch FROM min(stored_at)) * 1e9)::bigint
            FROM relay_log_frames WHERE stream = \(stream) GROUP BY span ORDER BY span
            """, logger: logger
        ).decode((Int64, Int64, Int64, Int64).self) {
            spans.append((id, FrameSpan(firstSequence: UInt64(bitPattern: first), bytes: bytes, createdAtNanoseconds: stored)))
        }
        var durableEnd: UInt64 = 1
        for try await end in try await connection.query(
            "SELECT coalesce(max(first_sequence + event_count), 1) FROM relay_log_frames WHERE stream = \(stream)", logger: logger
        ).decode(Int64.self) {
            durableEnd = UInt64(bitPattern: end)
        }
        var cursors: [String: UInt64] = [:]
        for try await (name, position) in try await connection.query(
            "SELECT consumer, position FROM relay_log_cursors WHERE stream = \(stream)", logger: logger
        ).decode((String, Int64).self) {
            cursors[name] = UInt64(bitPattern: position)
        }
        return PostgresStreamExtent(
            relayID: relayID, created: created, writer: writer, isNew: isNew, durableEnd: durableEnd, spans: spans, cursors: cursors)
    }
}

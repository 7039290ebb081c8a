import Foundation
import RelayCore
import RelayIO
import RelayTestSupport

@testable import RelayLog
@testable import RelayPostgres

/// What the suites of the log kept in PostgreSQL share: opening a stream of a throw-away cluster
/// (``TestPostgres``), events that carry their own number, reading a log to its durable end on a
/// thread made for blocking calls, and the rows of `relay_log_frames` as psql shows them.
enum PostgresLogFixture {
    /// A row of `relay_log_frames`.
    struct Row: Equatable, CustomStringConvertible {
        var firstSequence: UInt64
        var eventCount: Int
        var span: Int64
        var frame: [UInt8]

        var description: String { "\(firstSequence)+\(eventCount) span \(span), \(frame.count) bytes" }
    }

    /// Why the fixture could not do what it was asked.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The readers' blocking waits (``PostgresFrameReader`` waits for its queries) run here, never
    /// on the cooperative pool.
    static let readers = BlockingExecutor(name: "pg-log-readers")

    /// The log's configuration in these tests: no preallocation, so that a file log of the same
    /// events ends where its frames end.
    static let configuration = LogConfiguration(preallocateSegments: false)

    static func location(_ postgres: TestPostgres) throws -> PostgresLocation {
        try PostgresLocation(url: postgres.url, option: "--log-postgres-url")
    }

    /// Opens stream `stream` of `postgres` as ``PostgresLog/open`` does for `serve`.
    static func open(
        _ postgres: TestPostgres, stream: String, configuration: LogConfiguration = configuration, consumers: [LogConsumerDeclaration] = [],
        fenced: Set<String> = [], fence: StreamLeaseFence = StreamLeaseFence(), readOnly: Bool = false
    ) async throws -> WriteAheadLog {
        try await PostgresLog.open(
            location: try location(postgres), stream: stream, newRelayID: "relay-\(stream)", configuration: configuration, consumers: consumers,
            fenced: fenced, fence: fence, readOnly: readOnly, walDirectory: temporaryDirectory("postgres-log-\(stream)"), logger: quietLogger
        ).log
    }

    /// A tracking hit identified by `id` (its message id); `delivery` lets a test look for its
    /// bytes at rest.
    static func event(_ id: Int64, delivery: String = "pg0190") -> Event {
        .tracking(
            TrackingEvent(
                action: .impression, messageId: MessageID(decimal: id), deliveryId: delivery, integrationKey: nil,
                time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000 + id * 1_000_000, fractionDigits: 3)))
    }

    /// Events `ids`, one per number.
    static func events(_ ids: ClosedRange<Int64>, delivery: String = "pg0190") -> [Event] { ids.map { event($0, delivery: delivery) } }

    /// The number of an event made by ``event(_:delivery:)``.
    static func id(of event: Event) -> Int64? {
        guard case .tracking(let hit) = event, case .decimal(let value) = hit.messageId.form else { return nil }
        return value
    }

    /// Every event of `log` from `position` below `limit`, `maximumEvents` per read, and the
    /// damage its reader reported, read on ``readers``.
    static func read(_ log: WriteAheadLog, from position: UInt64 = 1, below limit: UInt64, maximumEvents: Int = 1000) async throws -> (
        events: [SequencedEvent], damage: [LogDamage]
    ) {
        try await read(log, from: position, below: [limit], maximumEvents: maximumEvents)
    }

    /// What one reader of `log` from `position` returns read after read, first below `limits[0]`
    /// until it returns nothing, then below `limits[1]`, and so on: a follower whose limit (the
    /// durable end) moves while it reads.
    static func read(_ log: WriteAheadLog, from position: UInt64 = 1, below limits: [UInt64], maximumEvents: Int = 1000) async throws -> (
        events: [SequencedEvent], damage: [LogDamage]
    ) {
        let (_, result) = await readers.run(moving: log.reader(from: position)) {
            (reader: inout any FrameReader) throws(LogError) -> ([SequencedEvent], [LogDamage]) in
            defer { reader.close() }
            var events: [SequencedEvent] = []
            var damage: [LogDamage] = []
            for limit in limits {
                while true {
                    let batch = try reader.read(maximumEvents: maximumEvents, below: limit)
                    damage += batch.damage
                    // A batch never holds more than asked, nor anything at or past its limit.
                    guard batch.events.count <= maximumEvents, batch.events.allSatisfy({ $0.sequence < limit }) else {
                        throw .storeUnavailable("a read of \(maximumEvents) below \(limit) returned \(batch.events.map(\.sequence))")
                    }
                    if batch.events.isEmpty { break }
                    events += batch.events
                }
            }
            return (events, damage)
        }
        return try result.get()
    }

    /// The rows of `stream`, by first sequence.
    static func rows(_ postgres: TestPostgres, stream: String) async throws -> [Row] {
        let text = try await postgres.psql(
            "SELECT first_sequence, event_count, span, encode(frame, 'hex') FROM relay_log_frames WHERE stream = '\(stream)' ORDER BY first_sequence")
        return try text.split(separator: "\n").map { line in
            let fields = line.split(separator: "|", omittingEmptySubsequences: false)
            guard fields.count == 4, let first = UInt64(fields[0]), let count = Int(fields[1]), let span = Int64(fields[2]),
                let frame = bytes(hex: fields[3])
            else { throw Failure(description: "psql printed a row that is not first|count|span|hex: \(line.prefix(200))") }
            return Row(firstSequence: first, eventCount: count, span: span, frame: frame)
        }
    }

    /// Inserts `record` as a row of `stream` in span `span`, as another process's commit would.
    static func insert(_ record: FrameRecord, stream: String, span: Int64, into postgres: TestPostgres) async throws {
        _ = try await postgres.psql(
            """
            INSERT INTO relay_log_frames (stream, first_sequence, event_count, span, frame)
            VALUES ('\(stream)', \(record.firstSequence), \(record.eventCount), \(span), decode('\(hex(record.bytes))', 'hex'))
            """)
    }

    /// Loads pg_stat_statements (a restart), so that a test counts the statements the relay ran.
    static func countStatements(_ postgres: TestPostgres) async throws {
        _ = try await postgres.psql("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        try await postgres.restartImmediately()
        _ = try await postgres.psql("CREATE EXTENSION pg_stat_statements")
    }

    /// How many times an INSERT into `relay_log_frames` ran, as pg_stat_statements counts.
    static func frameInserts(_ postgres: TestPostgres) async throws -> Int {
        let text = try await postgres.psql(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE 'INSERT INTO relay_log_frames%'")
        guard let count = Int(text) else { throw Failure(description: "pg_stat_statements answered \(text)") }
        return count
    }

    /// Polls `condition` every 100 ms until it holds; fails after `seconds`.
    static func waitFor(_ what: String, seconds: Double = 30, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw Failure(description: "waited \(seconds) s for \(what)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func bytes(hex text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        for index in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}

extension PostgresLogFixture {
    /// Runs `body` with a cluster of its own, removed afterwards whether `body` failed or not.
    static func withCluster(_ body: (TestPostgres) async throws -> Void) async throws {
        let postgres = try await TestPostgres.start()
        do {
            try await body(postgres)
        } catch {
            await postgres.destroy()
            throw error
        }
        await postgres.destroy()
    }

    /// The text of a ``LogError/storeUnavailable(_:)`` that `append` threw; fails otherwise.
    static func storeUnavailable(_ append: () async throws(LogError) -> Range<UInt64>) async throws -> String {
        let outcome: Result<Range<UInt64>, LogError>
        do throws(LogError) {
            outcome = .success(try await append())
        } catch {
            outcome = .failure(error)
        }
        switch outcome {
        case .success(let range): throw Failure(description: "the append succeeded (\(range)) where it had to fail")
        case .failure(.storeUnavailable(let text)): return text
        case .failure(let other): throw Failure(description: "the append failed otherwise: \(other)")
        }
    }
}

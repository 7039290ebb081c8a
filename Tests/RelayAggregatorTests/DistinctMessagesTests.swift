import RelayAggregator
import RelayCore
import RelayIO
import RelayLog
import RelaySQLite
import RelayTestSupport
import TestTiers
import Testing

/// Unique counts kept in chunks of distinct ids (schema version 3), and the migration of a
/// version 2 database, whose distinct messages were one row each.
@Suite("Aggregator: distinct messages in chunks, and the migration from version 2", .tier(.fast))
struct DistinctMessagesTests {
    static let time = EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000)

    static func hit(_ action: TrackingAction, _ id: String, delivery: String = "d1") throws -> Event {
        .tracking(TrackingEvent(action: action, messageId: try MessageID(id), deliveryId: delivery, time: time))
    }

    static func sql<Value>(_ path: String, _ body: @escaping @Sendable (SQLiteConnection) throws(SQLiteError) -> Value) async throws -> Value
    where Value: Sendable {
        try await BlockingExecutor(name: "test-sqlite").run { () throws(SQLiteError) -> Value in
            let connection = try SQLiteConnection(path: path)
            defer { connection.close() }
            return try body(connection)
        }
    }

    static func integer(_ path: String, _ query: String) async throws -> Int64 {
        try await sql(path) { connection throws(SQLiteError) in
            let statement = try connection.prepare(query)
            defer { statement.finalize() }
            _ = try statement.step()
            return statement.int64(0)
        }
    }

    @Test("5,000 distinct opens of one chunk, sent in small batches with repeats, count 5,000 once the chunk is a bitmap")
    func denseChunkBecomesBitmap() async throws {
        let directory = temporaryDirectory("dense")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, batchSize: 37, logger: quietLogger)
        // 65,536 × 40 is the chunk's first id; every id is sent twice, the second time 1,000 ids later.
        let base = 65_536 * 40
        var events: [Event] = []
        for index in 0..<6_000 {
            if index < 5_000 { events.append(try Self.hit(.open, String(base + index))) }
            if index >= 1_000 { events.append(try Self.hit(.open, String(base + index - 1_000))) }
        }
        for start in stride(from: 0, to: events.count, by: 900) {
            _ = try await log.append(Array(events[start..<min(start + 900, events.count)]))
            _ = try await aggregator.catchUp()
        }
        await aggregator.close()
        await log.close()
        let path = Aggregator.databasePath(dataDirectory: directory)
        let row = try #require(try await AggregateQueries(path: path).deliveries().first)
        #expect([row.opens, row.uniqueOpens] == [10_000, 5_000])
        #expect(try await Self.integer(path, "SELECT count(*) FROM delivery_message_chunks") == 1)
        #expect(try await Self.integer(path, "SELECT length(members) FROM delivery_message_chunks") == 8_192)
        #expect(try await Self.integer(path, "SELECT chunk FROM delivery_message_chunks") == 40)
    }

    /// What version 2 stored for the distinct messages (docs/aggregates.md of that version).
    static let versionTwoTable = """
        CREATE TABLE delivery_messages (
            delivery_action INTEGER NOT NULL,
            message_key BLOB NOT NULL,
            PRIMARY KEY (delivery_action, message_key)
        ) WITHOUT ROWID
        """

    @Test("a version 2 database is migrated in place: every distinct message carried over, so repeats after it are not counted again")
    func versionTwoMigrates() async throws {
        let directory = temporaryDirectory("schema2")
        defer { removeTree(directory) }
        let path = Aggregator.databasePath(dataDirectory: directory)
        let uuid = "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6"
        // Ids in two chunks, a negative 64-bit id, a 32-bit negative one (counted by its low 32
        // bits) and a UUID, on three actions.
        let before = [
            try Self.hit(.impression, "1000"), try Self.hit(.impression, "70000"), try Self.hit(.impression, "-9000000000000"),
            try Self.hit(.open, "1000"), try Self.hit(.open, "-5"), try Self.hit(.click, uuid),
        ]
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
        _ = try await log.append(before)
        let first = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        _ = try await first.catchUp()
        await first.close()
        // The same counts as version 2 wrote them: one row per distinct message, UUIDs as text.
        let reference = try await Self.integer(path, "SELECT delivery_ref FROM deliveries WHERE delivery_id = 'd1'")
        try await Self.sql(path) { connection throws(SQLiteError) in
            try connection.execute(
                """
                \(VersionThreeTables.downgrade)
                DROP TABLE delivery_message_chunks; DROP TABLE delivery_message_uuids;
                \(Self.versionTwoTable);
                INSERT INTO delivery_messages VALUES
                    (\(reference * 4), 1000), (\(reference * 4), 70000), (\(reference * 4), -9000000000000),
                    (\(reference * 4 + 1), 1000), (\(reference * 4 + 1), 4294967291), (\(reference * 4 + 2), '\(uuid)');
                UPDATE aggregator_state SET schema_version = 2;
                """)
        }
        #expect(try await AggregateQueries(path: path).deliveries().first?.uniqueImpressions == 3, "readers take a version 2 file as it is")

        let aggregator = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        #expect(try await Self.integer(path, "SELECT schema_version FROM aggregator_state") == 5)
        #expect(try await Self.integer(path, "SELECT count(*) FROM deliveries WHERE tenant = '' AND delivery_ref = \(reference)") == 1)
        #expect(try await Self.integer(path, "SELECT count(*) FROM sqlite_master WHERE name = 'delivery_messages'") == 0)
        #expect(try await Self.integer(path, "SELECT count(*) FROM delivery_message_chunks") == 5)
        #expect(try await Self.integer(path, "SELECT length(message_uuid) FROM delivery_message_uuids") == 16)
        // Repeats of every migrated message (in other spellings where they have one), and two new ones.
        _ = try await log.append([
            try Self.hit(.impression, "01000"), try Self.hit(.impression, "70000"), try Self.hit(.impression, "-9000000000000"),
            try Self.hit(.open, "h3e8"), try Self.hit(.open, "4294967291"), try Self.hit(.click, uuid.uppercased()),
            try Self.hit(.impression, "70001"), try Self.hit(.click, "1000"),
        ])
        _ = try await aggregator.catchUp()
        await aggregator.close()
        await log.close()
        let row = try #require(try await AggregateQueries(path: path).deliveries().first)
        #expect([row.impressions, row.opens, row.clicks] == [7, 4, 3])
        #expect([row.uniqueImpressions, row.uniqueOpens, row.uniqueClicks] == [4, 2, 2])
    }

    @Test("a database of an unknown schema version is refused with the way out")
    func unknownVersionRefused() async throws {
        let directory = temporaryDirectory("schema9")
        defer { removeTree(directory) }
        let path = Aggregator.databasePath(dataDirectory: directory)
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
        _ = try await log.append([try Self.hit(.open, "1")])
        await (try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)).close()
        try await Self.sql(path) { connection throws(SQLiteError) in try connection.execute("UPDATE aggregator_state SET schema_version = 9") }
        await #expect {
            _ = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        } throws: { error in
            guard case .schemaMismatch(_, 9, 5)? = error as? AggregatorError else { return false }
            return "\(error)".contains("stats --rebuild")
        }
        await log.close()
    }
}

import RelayAggregator
import RelayCore
import RelayIO
import RelayLog
import RelaySQLite
import RelayTestSupport
import TestTiers
import Testing

/// Per-origin counts of a relay that takes batches from other relays (`stats`, `relay_origins`).
@Suite("Aggregator: events per origin relay", .tier(.fast))
struct OriginCountsTests {
    static let relayA = "aaaaaaaa-0000-4000-8000-000000000001"
    static let relayB = "bbbbbbbb-0000-4000-8000-000000000002"
    static let relayC = "cccccccc-0000-4000-8000-000000000003"
    static let baseTime: Int64 = 1_795_255_200_000_000_000

    static func position(_ relay: String, _ epoch: UInt32, _ sequence: UInt64) throws -> RelayPosition {
        try RelayPosition(relayID: relay, epoch: epoch, sequence: sequence)
    }

    static func hit(_ id: Int64, from chain: ChainOrigin?) -> Event {
        var hit = TrackingEvent(
            action: .open, messageId: MessageID(decimal: id), deliveryId: "d1", time: EventTime(nanosecondsSinceEpoch: baseTime + id * 1_000_000))
        hit.chain = chain
        return .tracking(hit)
    }

    static func registration(_ id: Int64, from chain: ChainOrigin?) -> Event {
        var registration = Registration(
            platform: .ios, integrationKey: "app", registrationToken: "token\(id)", time: EventTime(nanosecondsSinceEpoch: baseTime + id * 1_000_000))
        registration.chain = chain
        return .registration(registration)
    }

    /// Relay A directly (5 hits, 2 registrations), A through C (3 hits), B in epoch 2 (4 hits) and
    /// then one late event of B's older epoch 1; plus events of this relay's own SDKs and a
    /// re-queued dead letter, which are not origins' events.
    static func events() throws -> [Event] {
        var events: [Event] = []
        for sequence in 1...5 { events.append(hit(Int64(sequence), from: ChainOrigin(first: try position(relayA, 1, UInt64(sequence))))) }
        for sequence in 6...7 { events.append(registration(Int64(sequence), from: ChainOrigin(first: try position(relayA, 1, UInt64(sequence))))) }
        events.append(hit(50, from: nil))
        for sequence in 8...10 {
            events.append(
                hit(
                    Int64(sequence),
                    from: ChainOrigin(first: try position(relayA, 1, UInt64(sequence)), hop: try position(relayC, 1, UInt64(90 + sequence)))))
        }
        for sequence in 1...4 { events.append(hit(Int64(20 + sequence), from: ChainOrigin(first: try position(relayB, 2, UInt64(sequence))))) }
        events.append(hit(30, from: ChainOrigin(first: try position(relayB, 1, 77))))
        var copy = hit(1, from: ChainOrigin(first: try position(relayA, 1, 1)))
        copy.origin = EventOrigin(sequence: 1)
        events.append(copy)
        events.append(registration(60, from: nil))
        return events
    }

    static func time(_ id: Int64) -> EventTime { EventTime(nanosecondsSinceEpoch: baseTime + id * 1_000_000, fractionDigits: 3) }

    static let expected = [
        OriginCounts(
            relayId: relayB, via: nil, events: 5, hits: 5, registrations: 0, epoch: 2, lastSequence: 4, firstEvent: time(21), lastEvent: time(30)),
        OriginCounts(
            relayId: relayA, via: relayC, events: 3, hits: 3, registrations: 0, epoch: 1, lastSequence: 10, firstEvent: time(8),
            lastEvent: time(10)),
        OriginCounts(
            relayId: relayA, via: nil, events: 7, hits: 5, registrations: 2, epoch: 1, lastSequence: 7, firstEvent: time(1), lastEvent: time(7)),
    ]

    static func origins(_ directory: String) async throws -> [OriginCounts] {
        let queries = try await AggregateQueries(path: Aggregator.databasePath(dataDirectory: directory))
        return try await queries.origins()
    }

    @Test("counted per first origin and the relay in between; the newest epoch wins; a rebuild gives the same rows")
    func countsPerOrigin() async throws {
        let directory = temporaryDirectory("origins")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
        let events = try Self.events()
        // Small transactions: rows are created in one and added to in the next.
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, batchSize: 3, logger: quietLogger)
        _ = try await log.append(Array(events[..<9]))
        _ = try await aggregator.catchUp()
        _ = try await log.append(Array(events[9...]))
        _ = try await aggregator.catchUp()
        await aggregator.close()
        #expect(try await Self.origins(directory) == Self.expected)

        _ = try await Aggregator.rebuild(log: log, dataDirectory: directory, batchSize: 1000, logger: quietLogger)
        #expect(try await Self.origins(directory) == Self.expected)
        await log.close()
    }

    @Test("an erased registration another relay handed on leaves its origin's row: registrations and events drop by one, nothing else moves")
    func erasureLeavesTheOriginsRow() async throws {
        let directory = temporaryDirectory("origins-erasure")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, batchSize: 3, logger: quietLogger)
        _ = try await log.append(try Self.events())
        _ = try await aggregator.catchUp()
        #expect(try await Self.origins(directory) == Self.expected)

        // Sequence 6: relay A's registration of token6 (printf %s token6 | sha256sum).
        let target = ErasurePlan.Target(
            sequence: 6, tenant: "", integrationKey: "app", platform: "ios",
            tokenDigest: "8675c9c1f6558212f7f95f5308c03655067e925157ed6e65f024aefadfc7d64f", timeNanoseconds: Self.baseTime + 6_000_000,
            originRelayId: Self.relayA, viaRelayId: nil, forwarded: false, handedOn: false)
        let (erasure, _) = try await aggregator.applyErasure([target]) {}
        await aggregator.close()
        await log.close()
        #expect(erasure.registrationsUncounted == 1 && erasure.tokensForgotten == 1, "\(erasure)")
        var expected = Self.expected
        expected[2].registrations -= 1
        expected[2].events -= 1
        #expect(try await Self.origins(directory) == expected, "relay A's row loses the registration, its times, epoch and last sequence stay")
    }

    @Test("a version 1 database reads without origins, and the aggregator brings it to the current version in place")
    func versionOneMigrates() async throws {
        let directory = temporaryDirectory("schema1")
        defer { removeTree(directory) }
        let path = Aggregator.databasePath(dataDirectory: directory)
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
        _ = try await log.append([Self.hit(1, from: nil), Self.hit(2, from: nil)])
        let first = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        _ = try await first.catchUp()
        await first.close()
        // What a relay before relay chains wrote: no relay_origins, one row per distinct message, schema_version 1.
        let sqlite = BlockingExecutor(name: "test-sqlite")
        try await sqlite.run { () throws(SQLiteError) in
            let connection = try SQLiteConnection(path: path)
            try connection.execute(
                """
                \(VersionThreeTables.downgrade)
                DROP TABLE relay_origins; DROP TABLE delivery_message_chunks; DROP TABLE delivery_message_uuids;
                \(DistinctMessagesTests.versionTwoTable);
                INSERT INTO delivery_messages SELECT delivery_ref * 4 + 1, 1 FROM deliveries;
                INSERT INTO delivery_messages SELECT delivery_ref * 4 + 1, 2 FROM deliveries;
                UPDATE aggregator_state SET schema_version = 1
                """)
            connection.close()
        }
        let old = try await AggregateQueries(path: path)
        #expect(try await old.origins() == [])
        #expect(try await old.deliveries().first?.opens == 2)
        await old.close()

        let aggregator = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        _ = try await log.append(try Self.events())
        _ = try await aggregator.catchUp()
        await aggregator.close()
        await log.close()
        let version = try await sqlite.run { () throws(SQLiteError) -> Int64 in
            let connection = try SQLiteConnection(path: path, readOnly: true)
            let statement = try connection.prepare("SELECT schema_version FROM aggregator_state")
            _ = try statement.step()
            let value = statement.int64(0)
            statement.finalize()
            connection.close()
            return value
        }
        #expect(version == 5)
        #expect(try await Self.origins(directory) == Self.expected)
        let row = try #require(try await AggregateQueries(path: path).deliveries().first)
        #expect(row.opens == 2 + 14, "14 hits of the mix count; the re-queued copy does not")
        #expect(row.uniqueOpens == 14, "messages 1 and 2, carried over from version 1, are not new again")
    }
}

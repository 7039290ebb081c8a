import Logging
import RelayAggregator
import RelayCore
import RelayLog
import RelaySQLite
import RelayTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Aggregator")
struct AggregatorTests {
    func read(_ directory: String) async throws -> ([DeliveryCounts], [RegistrationCounts]) {
        let queries = try await AggregateQueries(path: Aggregator.databasePath(dataDirectory: directory))
        return (try await queries.deliveries(), try await queries.registrations())
    }

    @Test("counts of a generated mix equal counts computed independently", arguments: [UInt64(1), 2, 3])
    func countsMatch(seed: UInt64) async throws {
        let directory = temporaryDirectory("aggregate")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        let events = try MixedEvents.make(count: 5000, seed: seed)
        var expected = ExpectedCounts()
        // Appends and catch-ups interleave; small transactions cross batch boundaries.
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, batchSize: 37, logger: quietLogger)
        for start in stride(from: 0, to: events.count, by: 700) {
            let slice = Array(events[start..<min(start + 700, events.count)])
            _ = try await log.append(slice)
            expected.add(slice)
            let summary = try await aggregator.catchUp()
            #expect(summary.events == slice.count)
        }
        #expect(await aggregator.nextSequence == 5001)
        #expect(await log.cursorPosition(Aggregator.cursorName) == 5001)
        await aggregator.close()
        await log.close()
        let (deliveries, registrations) = try await read(directory)
        #expect(expected.difference(from: deliveries, registrations) == nil, "\(expected.difference(from: deliveries, registrations) ?? "")")
        #expect(!deliveries.isEmpty && !registrations.isEmpty)
    }

    @Test("duplicate hits raise totals but not unique counts")
    func uniqueVersusTotal() async throws {
        let directory = temporaryDirectory("unique")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        let time = EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000)
        func hit(_ action: TrackingAction, _ id: String) throws -> Event {
            .tracking(TrackingEvent(action: action, messageId: try MessageID(id), deliveryId: "f0190", time: time))
        }
        // 55336 and 055336 are one message on the wire (hd828); so are -1 and 4294967295 (hffffffff).
        _ = try await log.append([
            try hit(.impression, "55336"), try hit(.impression, "55336"), try hit(.impression, "055336"), try hit(.impression, "12345"),
            try hit(.open, "55336"), try hit(.open, "55336"), try hit(.click, "-1"), try hit(.click, "4294967295"),
            try hit(.click, "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6"), try hit(.click, "6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6"),
        ])
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        _ = try await aggregator.catchUp()
        // The same hit sent again later (an SDK retry) changes totals only.
        _ = try await log.append([try hit(.impression, "12345"), try hit(.open, "99")])
        _ = try await aggregator.catchUp()
        await aggregator.close()
        await log.close()
        let row = try #require(try await read(directory).0.first)
        #expect([row.impressions, row.opens, row.clicks] == [5, 3, 4])
        #expect([row.uniqueImpressions, row.uniqueOpens, row.uniqueClicks] == [2, 2, 2])
    }

    @Test("a rebuild from the log gives the counts of the incremental run")
    func rebuildMatchesIncremental() async throws {
        let directory = temporaryDirectory("rebuild")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        let events = try MixedEvents.make(count: 4000, seed: 9)
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, batchSize: 100, logger: quietLogger)
        for start in stride(from: 0, to: events.count, by: 333) {
            _ = try await log.append(Array(events[start..<min(start + 333, events.count)]))
            _ = try await aggregator.catchUp()
        }
        await aggregator.close()
        let incremental = try await read(directory)
        let summary = try await Aggregator.rebuild(log: log, dataDirectory: directory, batchSize: 1000, logger: quietLogger)
        #expect(summary.events == 4000)
        #expect(summary.endPosition == 4001)
        let rebuilt = try await read(directory)
        #expect(rebuilt.0 == incremental.0)
        #expect(rebuilt.1 == incremental.1)
        #expect(!PosixFileSystem().exists(Aggregator.databasePath(dataDirectory: directory) + ".rebuild"))
        await log.close()
    }

    @Test("a missing database is rebuilt from the log; an unreadable one is refused, then rebuilt and quarantined")
    func missingAndUnreadableDatabase() async throws {
        let directory = temporaryDirectory("damaged")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        let events = try MixedEvents.make(count: 300, seed: 4)
        _ = try await log.append(events)
        var expected = ExpectedCounts()
        expected.add(events)

        // Missing: built from the log on open.
        let first = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        #expect(try await first.catchUp().events == 300)
        await first.close()
        #expect(
            try await {
                let (d, r) = try await read(directory)
                return expected.difference(from: d, r)
            }() == nil)

        // Unreadable: garbage where the database was.
        let path = Aggregator.databasePath(dataDirectory: directory)
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        let file = try PosixFileSystem().open(path, create: true)
        try file.write(Array(repeating: 0xAB, count: 8192), at: 0)
        file.close()
        await #expect {
            _ = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        } throws: { error in
            guard case AggregatorError.unreadableDatabase(let reported, _) = error else { return false }
            return reported == path
        }
        // The log is untouched by the failure.
        #expect(await log.durableSequence == 301)
        let summary = try await Aggregator.rebuild(log: log, dataDirectory: directory, logger: quietLogger)
        #expect(summary.events == 300)
        #expect(
            try await {
                let (d, r) = try await read(directory)
                return expected.difference(from: d, r)
            }() == nil)
        let quarantined = try PosixFileSystem().listDirectory("\(directory)/quarantine")
        #expect(quarantined.contains { $0.hasPrefix("aggregates.sqlite.") })
        await log.close()
    }

    @Test("a log that no longer starts at 1 is refused for a new database unless partial counts are allowed")
    func trimmedLog() async throws {
        let directory = temporaryDirectory("trimmed")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: LogConfiguration(segmentBytes: 4096, compressionLevel: 0), logger: quietLogger)
        for _ in 0..<10 { _ = try await log.append(try MixedEvents.make(count: 100, seed: 5)) }
        try await log.commitCursor("uploader", to: 1001)
        #expect(await log.oldestSequence > 1)
        await #expect {
            _ = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        } throws: { error in
            guard case AggregatorError.logTrimmed(_, let needed, let oldest) = error else { return false }
            return needed == 1 && oldest > 1
        }
        await #expect(throws: AggregatorError.self) { try await Aggregator.rebuild(log: log, dataDirectory: directory, logger: quietLogger) }
        let partial = try await Aggregator.rebuild(log: log, dataDirectory: directory, allowPartial: true, logger: quietLogger)
        #expect(partial.events == Int(1001 - (await log.oldestSequence)))
        await log.close()
    }

    @Test("two aggregators on one database never count an event twice")
    func concurrentAggregators() async throws {
        let directory = temporaryDirectory("two")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        let events = try MixedEvents.make(count: 600, seed: 11)
        _ = try await log.append(events)
        let one = try await Aggregator(log: log, dataDirectory: directory, batchSize: 50, logger: quietLogger)
        let two = try await Aggregator(log: log, dataDirectory: directory, batchSize: 50, logger: quietLogger)
        _ = try await one.catchUp()
        await #expect {
            _ = try await two.catchUp()
        } throws: { error in
            guard case AggregatorError.positionMoved(let expected, let found) = error else { return false }
            return expected == 1 && found == 601
        }
        await one.close()
        await two.close()
        await log.close()
        var expected = ExpectedCounts()
        expected.add(events)
        let (deliveries, registrations) = try await read(directory)
        #expect(expected.difference(from: deliveries, registrations) == nil)
    }
}

import Logging
import RelayAggregates
import RelayAggregator
import RelayCore
import RelayLog
import RelaySQLite
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Aggregator", .tier(.fast))
struct AggregatorTests {
    func read(_ directory: String) async throws -> ([DeliveryCounts], [RegistrationCounts]) {
        let queries = try await AggregateQueries(path: Aggregator.databasePath(dataDirectory: directory))
        return (try await queries.deliveries(), try await queries.registrations())
    }

    @Test("counts of a generated mix equal counts computed independently", arguments: [UInt64(1), 2, 3])
    func countsMatch(seed: UInt64) async throws {
        let directory = temporaryDirectory("aggregate")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
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

    @Test("a report is one snapshot: while the aggregator commits, the counts always hold exactly the events the positions cover")
    func reportIsOneSnapshot() async throws {
        let directory = temporaryDirectory("snapshot")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, batchSize: 5, logger: quietLogger)
        _ = try await log.append([openHit(0, delivery: "d0")])
        _ = try await aggregator.catchUp()
        let queries = try await AggregateQueries(path: Aggregator.databasePath(dataDirectory: directory))
        let writing = Task {
            // 3,000 events in transactions of 5, each one hit of its own.
            for start in stride(from: 1, to: 3_001, by: 50) {
                _ = try await log.append((start..<start + 50).map { openHit($0, delivery: "d\($0 % 3)") })
                _ = try await aggregator.catchUp()
            }
        }
        var reports = 0
        var mismatches: [String] = []
        var finished = false
        while !finished {
            finished = await aggregator.nextSequence > 3_000
            let report = try await queries.report()
            let counted = report.deliveries.reduce(Int64(0)) { $0 + $1.impressions + $1.opens + $1.clicks }
            let covered = Int64(report.sequences.count)
            if counted != covered { mismatches.append("\(counted) counted, \(covered) covered") }
            reports += 1
        }
        try await writing.value
        await queries.close()
        await aggregator.close()
        await log.close()
        #expect(reports > 50, "the reads must overlap the commits")
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(reports) reports mixed two states: \(mismatches.prefix(5))")
    }

    @Test("a cancelled catch-up stops after the batch under way, its position saved and its counts exact (a server's SIGTERM with a backlog)")
    func cancelledCatchUpStops() async throws {
        let directory = temporaryDirectory("cancel")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
        for start in stride(from: 0, to: 200_000, by: 20_000) {
            _ = try await log.append((start..<start + 20_000).map { openHit($0, delivery: "d\($0 % 5)") })
        }
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, batchSize: 500, logger: quietLogger)
        let catchingUp = Task { try await aggregator.catchUp() }
        // Cancelled once the first batches are in: 400 transactions remain at that point.
        while await aggregator.nextSequence < 2_001 { try await Task.sleep(for: .milliseconds(1)) }
        catchingUp.cancel()
        let summary = try await catchingUp.value
        let next = await aggregator.nextSequence
        #expect(summary.endPosition == next)
        #expect(next < 100_001, "the catch-up went on to \(next) after its cancellation")
        await aggregator.close()
        #expect(await log.cursorPosition(Aggregator.cursorName) == next)
        await log.close()
        let (deliveries, _) = try await read(directory)
        #expect(deliveries.reduce(Int64(0)) { $0 + $1.opens } == Int64(next - 1), "counts exactly the events before the position")
    }

    @Test("SDK hits committed one by one are all counted, the one whose frame crosses the preallocated end included")
    func oneByOneAcrossPreallocationSteps() async throws {
        let directory = temporaryDirectory("one-by-one")
        defer { removeTree(directory) }
        // The segment grows 512 bytes at a time: some single-event frames start before the size
        // the aggregator's reader last measured and end after it.
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: LogConfiguration(preallocationStep: 512), consumers: [Aggregator.consumer], logger: quietLogger)
        var aggregator = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        var skipped: UInt64 = 0
        for id in 0..<200 {
            _ = try await log.append([openHit(1000 + id, delivery: "d0")])
            skipped += try await aggregator.catchUp().skippedSequences
            if id % 2 == 1 {
                // A restart (`serve` after kill -9) goes on from the stored position with a new reader.
                await aggregator.close()
                aggregator = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
            }
        }
        #expect(skipped == 0)
        #expect(await aggregator.nextSequence == 201)
        await aggregator.close()
        await log.close()
        let row = try #require(try await read(directory).0.first)
        #expect([row.opens, row.uniqueOpens] == [200, 200])
    }

    @Test("duplicate hits raise totals but not unique counts")
    func uniqueVersusTotal() async throws {
        let directory = temporaryDirectory("unique")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
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
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
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
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
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
        // A relay whose only consumer was its uploader: the segments it passed are gone.
        let configuration = LogConfiguration(segmentBytes: 4096, compressionLevel: 0, retention: .none)
        let forwarded = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: configuration, consumers: [.cursorFile("uploader")], logger: quietLogger)
        for _ in 0..<10 { _ = try await forwarded.append(try MixedEvents.make(count: 100, seed: 5)) }
        try await forwarded.commitCursor("uploader", to: 1001)
        #expect(await forwarded.oldestSequence > 1)
        await forwarded.close()
        // Then aggregates are asked for.
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: configuration, consumers: [Aggregator.consumer], logger: quietLogger)
        #expect(await log.oldestSequence > 1)
        await #expect {
            _ = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        } throws: { error in
            guard case AggregatorError.logTrimmed(_, let needed, let oldest) = error else { return false }
            return needed == 1 && oldest > 1
        }
        await #expect {
            try await Aggregator.rebuild(log: log, dataDirectory: directory, logger: quietLogger)
        } throws: { error in
            guard case AggregatorError.logTrimmed(_, let needed, _) = error else { return false }
            return needed == 1
        }
        let partial = try await Aggregator.rebuild(log: log, dataDirectory: directory, allowPartial: true, logger: quietLogger)
        #expect(partial.events == Int(1001 - (await log.oldestSequence)))
        await log.close()
    }

    @Test("two aggregators on one database never count an event twice")
    func concurrentAggregators() async throws {
        let directory = temporaryDirectory("two")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
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

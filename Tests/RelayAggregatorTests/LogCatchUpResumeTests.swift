import RelayAggregator
import RelayCore
import RelayIO
import RelayLog
import RelayTestSupport
import TestTiers
import Testing

/// A catch-up that stopped because a batch could not be applied (a full disk under SQLite, an
/// I/O error) must be resumable: `serve`'s aggregator tries again after such a failure, with the
/// reader the failed catch-up handed back. That reader must stand at the failed batch, not past
/// the batches the read-ahead had already decoded, or their events would never be counted.
@Suite("LogCatchUp resumed after a failed batch", .tier(.fast))
struct LogCatchUpResumeTests {
    struct Refused: Error {}

    @Test("the next catch-up starts at the batch that failed, and applies every later event once")
    func resumesAtTheFailedBatch() async throws {
        let directory = temporaryDirectory("catch-up-resume")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        for batch in 0..<10 {
            let events = (1...100).map { offset in openHit(batch * 100 + offset, delivery: "d") }
            _ = try await log.append(events)
        }
        let readAhead = BlockingExecutor(name: "catch-up-read-ahead")
        var applied: [UInt64] = []
        // Batches from sequence 301 on fail, while the read-ahead has already decoded the next one.
        let failed = await LogCatchUp.run(
            log: log, reader: nil, from: 1, batchSize: 100, readAhead: readAhead, cursor: nil, logger: quietLogger, progress: nil
        ) { (events, from, _) throws(Refused) in
            if from >= 301 { throw Refused() }
            applied += events.map(\.sequence)
        }
        #expect(failed.failure != nil)
        #expect(failed.summary.endPosition == 301)
        var ranges: [ClosedRange<UInt64>] = []
        let resumed = await LogCatchUp.run(
            log: log, reader: failed.reader, from: failed.summary.endPosition, batchSize: 100, readAhead: readAhead, cursor: nil,
            logger: quietLogger, progress: nil
        ) { (events, from, to) throws(Refused) in
            ranges.append(from...(to - 1))
            applied += events.map(\.sequence)
        }
        #expect(resumed.failure == nil)
        #expect(ranges.first?.lowerBound == 301, "the resumed catch-up starts at the failed batch: \(ranges)")
        #expect(applied == Array(1...1000), "every event applied once, in order")
        await log.close()
    }
}

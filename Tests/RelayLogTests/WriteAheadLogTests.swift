import RelayCore
import RelayTestSupport
import Testing

@testable import RelayLog

/// Appending, group commit, segment rolls, cursors and segment deletion.
@Suite("Write-ahead log")
struct WriteAheadLogTests {
    @Test("appends that arrive during a slow fdatasync share the next commit: 64 appends, 2 syncs")
    func coalescingBehindASlowSync() async throws {
        let fileSystem = SimulatedFileSystem()
        let directory = "/group-slow"
        let log = try await WriteAheadLog.open(dataDirectory: directory, fileSystem: fileSystem, logger: quietLogger)
        let before = await log.stats.commits
        fileSystem.holdSynchronize()
        let first = Task { try await log.append([TestEvents.tracking(0)]) }
        try await waitFor("the first append's fdatasync to start") { fileSystem.synchronizeCallsWaiting == 1 }
        let rest = (1..<64).map { appender in Task { try await log.append((0..<10).map { TestEvents.tracking(Int64(appender * 10 + $0)) }) } }
        try await waitFor("63 appends waiting behind the sync") { await log.waitingEvents == 630 }
        fileSystem.releaseSynchronize()
        _ = try await first.value
        for task in rest { _ = try await task.value }
        let commits = await log.stats.commits - before
        // One commit for the first append, one for the 63 that waited behind its sync.
        #expect(commits == 2, "63 appends waiting on one sync must share one commit, got \(commits) commits")
        #expect(await log.stats.events == 631)
        await log.close()
    }

    @Test("concurrent appends share group commits and get contiguous, ordered ranges")
    func groupCommit() async throws {
        let directory = temporaryDirectory("group")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        let ranges = try await withThrowingTaskGroup(of: (Int, Range<UInt64>).self) { group in
            for appender in 0..<64 {
                group.addTask {
                    let events = (0..<10).map { TestEvents.tracking(Int64(appender * 10 + $0)) }
                    return (appender, try await log.append(events))
                }
            }
            var collected: [Int: Range<UInt64>] = [:]
            for try await (appender, range) in group { collected[appender] = range }
            return collected
        }
        let stats = await log.stats
        #expect(stats.events == 640)
        #expect(stats.commits < 64, "64 concurrent appends must share fdatasyncs, got \(stats.commits) commits")
        #expect(ranges.values.map(\.count).allSatisfy { $0 == 10 })
        #expect(ranges.values.sorted { $0.lowerBound < $1.lowerBound }.map(\.lowerBound) == stride(from: 1, to: 641, by: 10).map { UInt64($0) })
        await log.close()
        let (events, _) = try readAll(directory, fileSystem: PosixFileSystem())
        for (appender, range) in ranges {
            let ids = events.filter { range.contains($0.sequence) }.compactMap { TestEvents.id(of: $0.event) }
            #expect(ids == (0..<10).map { Int64(appender * 10 + $0) })
        }
    }

    @Test("segments roll by size, sequence numbers continue across reopen, readers start anywhere")
    func rollAndReopen() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = LogConfiguration(segmentBytes: 1500, compressionLevel: 0)
        var log = try await WriteAheadLog.open(dataDirectory: "/d", configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
        for batch in 0..<10 { _ = try await log.append((1...20).map { TestEvents.tracking(Int64(batch * 20) + $0) }) }
        await log.close()
        let segments = try fileSystem.listDirectory("/d/wal").filter { $0.hasSuffix(".wal") }
        #expect(segments.count > 2)
        log = try await WriteAheadLog.open(dataDirectory: "/d", configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
        #expect(await log.durableSequence == 201)
        #expect(try await log.append([TestEvents.tracking(201)]) == 201..<202)
        await log.close()
        let (events, _) = try readAll("/d", fileSystem: fileSystem, from: 77)
        #expect(events.map(\.sequence) == Array(77...201))
        #expect(events.compactMap { TestEvents.id(of: $0.event) } == Array(77...201))
    }

    @Test("a reader bounded by durableSequence tails the log as it grows")
    func tailing() async throws {
        let directory = temporaryDirectory("tail")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, configuration: LogConfiguration(segmentBytes: 4096), logger: quietLogger)
        var reader = LogReader(walDirectory: "\(directory)/wal", from: 1)
        var seen: [Int64] = []
        for round in 0..<20 {
            _ = try await log.append((0..<25).map { TestEvents.tracking(Int64(round * 25) + $0) })
            let batch = try reader.read(maximumEvents: 1000, below: await log.durableSequence)
            seen += batch.events.compactMap { TestEvents.id(of: $0.event) }
        }
        #expect(seen == Array(0..<500))
        await log.close()
    }

    @Test("segments are deleted only when every cursor has passed them")
    func retentionFollowsCursors() async throws {
        let fileSystem = SimulatedFileSystem()
        let log = try await WriteAheadLog.open(
            dataDirectory: "/d", configuration: LogConfiguration(segmentBytes: 1200, compressionLevel: 0), fileSystem: fileSystem, logger: quietLogger
        )
        try await log.registerCursor("aggregator")
        try await log.registerCursor("uploader")
        for batch in 0..<12 { _ = try await log.append((1...20).map { TestEvents.tracking(Int64(batch * 20) + $0) }) }
        func segmentStarts() throws -> [UInt64] {
            try fileSystem.listDirectory("/d/wal").compactMap(SegmentHeader.firstSequence(fromFileName:)).sorted()
        }
        let before = try segmentStarts()
        #expect(before.count >= 4)
        try await log.commitCursor("aggregator", to: 241)
        #expect(try segmentStarts() == before, "the uploader has not moved: nothing may be deleted")
        try await log.commitCursor("uploader", to: before[2])
        #expect(try segmentStarts() == Array(before.dropFirst(2)))
        #expect(await log.oldestSequence == before[2])
        let (events, _) = try readAll("/d", fileSystem: fileSystem, from: before[2])
        #expect(events.first?.sequence == before[2])
        #expect(events.last?.sequence == 240)
        await log.close()
    }
}

/// Waits until `condition` holds, checking every millisecond, for at most `seconds`; records what was
/// awaited when the time runs out.
func waitFor(_ what: String, seconds: Double = 30, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(1))
    }
    Issue.record("gave up after \(seconds) s waiting for \(what)")
}

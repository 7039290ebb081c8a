import Foundation
import RelayCore
import RelayTestSupport
import Synchronization
import TestTiers
import Testing

@testable import RelayLog

/// Appending, group commit, segment rolls, cursors and segment deletion.
@Suite("Write-ahead log", .tier(.fast))
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

    @Test("appends handed in with a completion, from a thread that is no task, share group commits with the async ones and hear back after the sync")
    func appendsWithCompletion() async throws {
        let fileSystem = SimulatedFileSystem()
        let directory = "/group-completion"
        let log = try await WriteAheadLog.open(dataDirectory: directory, fileSystem: fileSystem, logger: quietLogger)
        fileSystem.holdSynchronize()
        let first = Task { try await log.append([TestEvents.tracking(0)]) }
        try await waitFor("the first append's fdatasync to start") { fileSystem.synchronizeCallsWaiting == 1 }
        let answers = Mutex<[Int: Result<Range<UInt64>, LogError>]>([:])
        // Handed in from a plain thread, as an event loop does.
        let handedIn = Thread {
            for appender in 1...10 {
                let events = (0..<3).map { TestEvents.tracking(Int64(appender * 10 + $0)) }
                log.append(events) { result in answers.withLock { $0[appender] = result } }
            }
        }
        handedIn.start()
        let asynchronous = (11...15).map { appender in
            Task { (appender, try await log.append((0..<3).map { TestEvents.tracking(Int64(appender * 10 + $0)) })) }
        }
        try await waitFor("the five async appends to queue behind the sync") { await log.waitingEvents == 15 }
        try await waitFor("the thread to hand in its ten appends") { handedIn.isFinished }
        // Nothing is answered while the sync that would cover it has not returned.
        #expect(answers.withLock { $0.isEmpty })
        fileSystem.releaseSynchronize()
        _ = try await first.value
        var ranges: [Int: Range<UInt64>] = [:]
        for task in asynchronous {
            let (appender, range) = try await task.value
            ranges[appender] = range
        }
        try await waitFor("the ten completions") { answers.withLock { $0.count == 10 } }
        for (appender, answer) in answers.withLock({ $0 }) { ranges[appender] = try answer.get() }
        // One commit for the first append, one for the fifteen that waited behind its sync.
        #expect(await log.stats.commits == 2)
        #expect(ranges.values.sorted { $0.lowerBound < $1.lowerBound }.map(\.lowerBound) == stride(from: 2, to: 47, by: 3).map { UInt64($0) })
        await log.close()
        let (events, _) = try readAll(directory, fileSystem: fileSystem)
        for (appender, range) in ranges {
            #expect(
                events.filter { range.contains($0.sequence) }.compactMap { TestEvents.id(of: $0.event) } == (0..<3).map { Int64(appender * 10 + $0) })
        }
        // A closed log refuses at once, on the caller's thread.
        let refused = Mutex<Result<Range<UInt64>, LogError>?>(nil)
        log.append([TestEvents.tracking(99)]) { result in refused.withLock { $0 = result } }
        #expect(refused.withLock { $0.map { result in if case .failure(.closed) = result { true } else { false } } } == true)
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

    @Test("a reader tailing the log reads the frame that crosses the end of the preallocated space it last measured")
    func tailingAcrossAPreallocationStep() async throws {
        let directory = temporaryDirectory("tail-step")
        defer { removeTree(directory) }
        // One event per commit, as SDK hits arrive; the segment grows 512 bytes at a time, so
        // some frames start before the size the reader measured and end after it.
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: LogConfiguration(preallocationStep: 512), logger: quietLogger)
        var reader = LogReader(walDirectory: "\(directory)/wal", from: 1)
        var notReadAtOnce: [UInt64] = []
        for id in 0..<200 {
            let appended = try await log.append([TestEvents.tracking(Int64(id))])
            // Every consumer (aggregator, upload lane) takes an empty read below the durable end
            // for damage and moves past it: the event must come back at once.
            let batch = try reader.read(maximumEvents: 100, below: await log.durableSequence)
            if batch.events.map(\.sequence) != [appended.lowerBound] { notReadAtOnce.append(appended.lowerBound) }
        }
        #expect(notReadAtOnce == [])
        #expect(reader.position == 201)
        await log.close()
    }

    @Test("segments are deleted only when every cursor has passed them")
    func retentionFollowsCursors() async throws {
        let fileSystem = SimulatedFileSystem()
        let log = try await WriteAheadLog.open(
            dataDirectory: "/d", configuration: LogConfiguration(segmentBytes: 1200, compressionLevel: 0, retention: .none), fileSystem: fileSystem,
            logger: quietLogger
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

    @Test("the oldest sequence kept stays put while a group commit or a segment deletion holds the writer")
    func oldestSequenceWhileTheWriterIsAway() async throws {
        let fileSystem = SimulatedFileSystem()
        let log = try await WriteAheadLog.open(
            dataDirectory: "/oldest", configuration: LogConfiguration(segmentBytes: 1200, compressionLevel: 0, retention: .none),
            fileSystem: fileSystem,
            logger: quietLogger
        )
        try await log.registerCursor("uploader")
        for batch in 0..<12 { _ = try await log.append((1...20).map { TestEvents.tracking(Int64(batch * 20) + $0) }) }
        let starts = try fileSystem.listDirectory("/oldest/wal").compactMap(SegmentHeader.firstSequence(fromFileName:)).sorted()
        #expect(starts.count >= 4)
        #expect(await log.oldestSequence == 1)
        #expect(await log.durableSequence == 241)
        // A group commit takes the writer to the I/O thread until its fdatasync returns. A consumer
        // starting meanwhile (an upload lane starts at max(cursor, oldestSequence)) must not be told
        // that the log begins at its durable end: it would pass over every event it had not sent.
        fileSystem.holdSynchronize()
        let append = Task { try await log.append([TestEvents.tracking(241)]) }
        try await waitFor("the append's fdatasync to start") { fileSystem.synchronizeCallsWaiting == 1 }
        #expect(await log.durableSequence == 241)
        let oldestDuringCommit = await log.oldestSequence
        #expect(oldestDuringCommit == 1, "the log still holds sequence 1 while a commit is under way")
        fileSystem.releaseSynchronize()
        #expect(try await append.value == 241..<242)
        #expect(await log.oldestSequence == 1)
        // After a deletion, the oldest sequence is the first one of the segment left first.
        try await log.commitCursor("uploader", to: starts[2])
        #expect(await log.oldestSequence == starts[2])
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

import RelayCore
import RelayTestSupport
import Synchronization
import TestTiers
import Testing

@testable import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// A wall clock the test moves by hand.
final class ManualClock: Sendable {
    private let nanoseconds: Mutex<Int64>

    init(start: Int64 = 1_800_000_000 * 1_000_000_000) {
        nanoseconds = Mutex(start)
    }

    var now: Int64 { nanoseconds.withLock { $0 } }

    func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        nanoseconds.withLock { $0 += seconds * 1_000_000_000 + attoseconds / 1_000_000_000 }
    }

    /// The closure the log reads.
    var reading: @Sendable () -> Int64 { { [self] in now } }
}

/// A flag one task sets and another reads.
final class Flag: Sendable {
    private let value = Mutex(false)

    var isSet: Bool { value.withLock { $0 } }

    func set() { value.withLock { $0 = true } }
}

/// Retention: segments every consumer has passed are kept for `--retain` and within
/// `--retain-bytes`, go oldest first after that, and go to the archive first with one.
@Suite("Log retention and archives", .timeLimit(.minutes(10)), .tier(.fast))
struct RetentionTests {
    static func starts(_ fileSystem: SimulatedFileSystem, _ directory: String) throws -> [UInt64] {
        try fileSystem.listDirectory(directory).compactMap(SegmentHeader.firstSequence(fromFileName:)).sorted()
    }

    /// The creation time in the header of each segment, by first sequence.
    static func creationTimes(_ fileSystem: SimulatedFileSystem, _ directory: String) throws -> [UInt64: Int64] {
        var times: [UInt64: Int64] = [:]
        for start in try starts(fileSystem, directory) {
            let bytes = try #require(fileSystem.contents("\(directory)/\(SegmentHeader.fileName(firstSequence: start))"))
            times[start] = try #require(SegmentHeader.decode(bytes)).createdAtNanoseconds
        }
        return times
    }

    /// A log in `directory` on a simulated file system, read by the consumers `cursors` (all at
    /// sequence 1), with `batches` batches appended `step` apart on a clock the test moves.
    static func openFilled(
        _ directory: String, _ configuration: LogConfiguration, cursors: [String] = ["uploader"], batches: Int, step: Duration = .seconds(1)
    ) async throws -> (SimulatedFileSystem, ManualClock, WriteAheadLog) {
        let fileSystem = SimulatedFileSystem()
        let clock = ManualClock()
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: configuration, fileSystem: fileSystem, logger: quietLogger, wallClock: clock.reading)
        for cursor in cursors { try await log.registerCursor(cursor) }
        try await fill(log, clock: clock, batches: 0..<batches, step: step)
        return (fileSystem, clock, log)
    }

    /// Appends `batches` batches of 100 events (about 1 KB: a segment of 1,200 bytes each), the
    /// clock moving `step` before each.
    static func fill(_ log: WriteAheadLog, clock: ManualClock, batches: Range<Int>, step: Duration) async throws {
        for batch in batches {
            clock.advance(by: step)
            _ = try await log.append(Self.batch(batch))
        }
    }

    /// The events of batch `number`: ids `number * 100 + 1` to `number * 100 + 100`.
    static func batch(_ number: Int) -> [Event] {
        (1...100).map { TestEvents.tracking(Int64(number * 100) + $0) }
    }

    @Test("by time: passed segments stay until their last event is older than --retain, then go oldest first; a consumer behind keeps them all")
    func byTime() async throws {
        let configuration = LogConfiguration(
            segmentBytes: 1200, compressionLevel: 0, retention: LogRetention(age: .seconds(3600), bytes: nil))
        // 24 batches, 10 minutes apart: about 4 hours of segments.
        let (fileSystem, clock, log) = try await Self.openFilled(
            "/t", configuration, cursors: ["uploader", "aggregator"], batches: 24, step: .seconds(600))
        let all = try Self.starts(fileSystem, "/t/wal")
        try #require(all.count >= 8, "\(all)")
        let created = try Self.creationTimes(fileSystem, "/t/wal")
        let end = await log.durableSequence

        // The uploader passes everything, the aggregator nothing: every segment is expired by
        // age, and all stay.
        try await log.commitCursor("uploader", to: end)
        try await log.applyRetention()
        #expect(try Self.starts(fileSystem, "/t/wal") == all, "the aggregator has not passed them: nothing may go")

        // Both passed: a segment goes once the next one (its last event's time) is an hour old.
        try await log.commitCursor("aggregator", to: end)
        func expectedKept() -> [UInt64] {
            all.enumerated().filter { index, _ in
                index == all.count - 1 || clock.now - (created[all[index + 1]] ?? 0) < 3_600_000_000_000
            }.map(\.element)
        }
        let kept = expectedKept()
        try #require(kept.count < all.count && kept.count > 1, "the test must expire some and keep some: \(kept) of \(all)")
        #expect(try Self.starts(fileSystem, "/t/wal") == kept)
        #expect(await log.oldestSequence == kept[0])
        let expiredSoFar = all.count - kept.count
        #expect(await log.stats.segmentsExpired == expiredSoFar)
        #expect(await log.stats.segmentsRemovedForRoom == 0)

        // Time passes with no cursor moving: the periodic pass expires the rest but the active one.
        clock.advance(by: .seconds(1800))
        try await log.applyRetention()
        let later = expectedKept()
        #expect(later.count < kept.count, "half an hour later more must have expired")
        #expect(try Self.starts(fileSystem, "/t/wal") == later)
        clock.advance(by: .seconds(7200))
        try await log.applyRetention()
        #expect(try Self.starts(fileSystem, "/t/wal") == [all.last].compactMap { $0 })
        #expect(await log.stats.segmentsExpired == all.count - 1)
        // What is left still reads, up to the end.
        let (events, _) = try readAll("/t", fileSystem: fileSystem, from: all[all.count - 1])
        #expect(events.last?.sequence == end - 1)
        await log.close()
    }

    @Test("by bytes: within the quota passed segments stay; past it the oldest passed go first, counted as quota")
    func byBytes() async throws {
        let quota: Int64 = 4_000
        let configuration = LogConfiguration(
            segmentBytes: 1200, compressionLevel: 0, retention: LogRetention(age: .seconds(86_400), bytes: quota))
        let (fileSystem, _, log) = try await Self.openFilled("/b", configuration, batches: 6)
        let first = try Self.starts(fileSystem, "/b/wal")
        try #require(first.count >= 5, "\(first)")
        // Nothing passed yet: the quota may be exceeded, nothing goes.
        #expect(await log.dataBytes > quota, "the test needs a log over its quota")
        try await log.applyRetention()
        #expect(try Self.starts(fileSystem, "/b/wal") == first)

        // The consumer passes the first two segments only: only those may go, oldest first.
        try await log.commitCursor("uploader", to: first[2])
        let afterTwo = try Self.starts(fileSystem, "/b/wal")
        #expect(afterTwo == Array(first.dropFirst(2)), "exactly the two passed segments go: \(afterTwo) of \(first)")
        #expect(await log.stats.segmentsRemovedForRoom == 2)
        #expect(await log.dataBytes > quota, "the segments not passed stay, whatever the quota says")

        // Passing everything: the oldest go until the log fits, the newest passed stay.
        try await log.commitCursor("uploader", to: await log.durableSequence)
        let fitted = try Self.starts(fileSystem, "/b/wal")
        let bytes = await log.dataBytes
        #expect(bytes <= quota, "\(bytes) bytes after the pass")
        #expect(fitted.count >= 2, "the quota keeps more than the active segment: \(fitted), \(bytes) bytes")
        #expect(fitted == Array(first.suffix(fitted.count)), "the newest stay")
        await log.close()
    }

    @Test("under the size limit an append deletes the oldest passed segments to make room, never one a consumer needs")
    func quotaPressureAtCommit() async throws {
        let configuration = LogConfiguration(
            segmentBytes: 1200, maximumLogBytes: 10_000, compressionLevel: 0, preallocateSegments: false,
            retention: LogRetention(age: .seconds(86_400), bytes: nil))
        let (fileSystem, _, log) = try await Self.openFilled("/q", configuration, batches: 3)
        let initial = try Self.starts(fileSystem, "/q/wal")
        let filled = await log.dataBytes
        try #require(initial.count >= 2, "\(initial), \(filled) bytes")
        // The consumer passes the first segment only.
        try await log.commitCursor("uploader", to: initial[1])
        #expect(try Self.starts(fileSystem, "/q/wal") == initial, "a day's retention keeps it while there is room")
        var appended = 0
        var refusal: LogError?
        for batch in 3..<40 {
            do {
                _ = try await log.append(Self.batch(batch))
                appended += 1
            } catch {
                refusal = error
                break
            }
        }
        let now = try Self.starts(fileSystem, "/q/wal")
        #expect(!now.contains(initial[0]), "the passed segment made room")
        #expect(now.first == initial[1], "the first segment the consumer needs stays: \(now)")
        #expect(await log.stats.segmentsRemovedForRoom == 1)
        guard case .logFull = refusal else {
            Issue.record("with nothing more passed, appends must end in log full, got \(String(describing: refusal)) after \(appended)")
            return
        }
        let (events, _) = try readAll("/q", fileSystem: fileSystem, from: initial[1])
        #expect(events.first?.sequence == initial[1])
        #expect(events.count == Int(await log.durableSequence - initial[1]), "every event the consumer needs is there")
        await log.close()
    }

    @Test("a full disk: segments kept only for replays make room for new events at once; with none passed the append fails")
    func fullDiskTakesRetainedSegments() async throws {
        let configuration = LogConfiguration(segmentBytes: 1200, compressionLevel: 0, retention: LogRetention(age: .seconds(86_400), bytes: nil))
        let (fileSystem, _, log) = try await Self.openFilled("/f", configuration, batches: 4)
        let initial = try Self.starts(fileSystem, "/f/wal")
        try #require(initial.count == 4, "\(initial)")

        // Nothing passed: a full disk fails the append, as before.
        fileSystem.fail(.write, errno: ENOSPC, times: 1)
        await #expect {
            _ = try await log.append(Self.batch(4))
        } throws: { error in
            // The batch needs a new segment: the full disk fails its start.
            guard case LogError.fileSystem(let cause, let context) = error else { return false }
            return cause.errno == ENOSPC && context.hasPrefix("starting segment")
        }
        #expect(try Self.starts(fileSystem, "/f/wal") == initial)

        // The consumer passes the first two segments: they are kept for the day, until the disk
        // fills; then the oldest goes and the same append succeeds.
        try await log.commitCursor("uploader", to: initial[2])
        #expect(try Self.starts(fileSystem, "/f/wal") == initial)
        fileSystem.fail(.write, errno: ENOSPC, times: 1)
        let stored = try await log.append(Self.batch(4))
        let after = try Self.starts(fileSystem, "/f/wal")
        #expect(!after.contains(initial[0]), "the oldest passed segment made room: \(after)")
        #expect(after.contains(initial[2]) && after.contains(initial[3]), "segments the consumer needs stay: \(after)")
        #expect(await log.stats.segmentsRemovedForRoom >= 1)
        // The next append meets a full disk too: the passed segments left (at least as many bytes
        // as it needs, oldest first) make room for it.
        try await log.commitCursor("uploader", to: initial[3])
        fileSystem.fail(.write, errno: ENOSPC, times: 1)
        let small = try await log.append([TestEvents.tracking(501)])
        let last = try Self.starts(fileSystem, "/f/wal")
        #expect(last.first == initial[3], "every passed segment left, the first one needed stays: \(last) of \(initial)")
        let (events, _) = try readAll("/f", fileSystem: fileSystem, from: initial[3])
        #expect(events.map(\.sequence) == Array(initial[3]..<small.upperBound))
        #expect(events.last?.event == TestEvents.tracking(501))
        #expect(stored.upperBound == small.lowerBound)

        // One more event fits in the active segment: the full disk fails the frame's write (not a
        // segment's start), and the oldest passed segment alone makes room.
        try await log.commitCursor("uploader", to: small.upperBound)
        fileSystem.fail(.write, errno: ENOSPC, times: 1)
        let one = try await log.append([TestEvents.tracking(502)])
        #expect(try Self.starts(fileSystem, "/f/wal") == Array(last.dropFirst()), "the oldest of \(last) made room")
        #expect(one == small.upperBound..<(small.upperBound + 1))
        #expect(try readAll("/f", fileSystem: fileSystem, from: one.lowerBound).events.map(\.event) == [TestEvents.tracking(502)])
        await log.close()
    }

    /// Small segments kept an hour once passed, then archived in `/archive`.
    static let archiving = LogConfiguration(
        segmentBytes: 1200, compressionLevel: 0, retention: LogRetention(age: .seconds(3600), bytes: nil), archiveDirectory: "/archive")

    /// Every event readable from the log and the archive together, from sequence 1.
    static func readMerged(_ fileSystem: SimulatedFileSystem, wal: String, archive: String) throws -> [SequencedEvent] {
        var reader = LogReader(walDirectory: wal, archiveDirectory: archive, fileSystem: fileSystem, from: 1)
        defer { reader.close() }
        var events: [SequencedEvent] = []
        while true {
            let batch = try reader.read(maximumEvents: 10_000)
            if batch.events.isEmpty { break }
            events += batch.events
        }
        return events
    }

    @Test("with an archive, expired segments are copied there intact before they leave the log; log and archive read as one")
    func archiveOnExpiry() async throws {
        let configuration = Self.archiving
        let (fileSystem, clock, log) = try await Self.openFilled("/a", configuration, batches: 12)
        let all = try Self.starts(fileSystem, "/a/wal")
        let originals = Dictionary(uniqueKeysWithValues: all.map { ($0, fileSystem.contents("/a/wal/\(SegmentHeader.fileName(firstSequence: $0))")) })
        let end = await log.durableSequence
        try await log.commitCursor("uploader", to: end)
        #expect(try Self.starts(fileSystem, "/a/wal") == all, "an hour's retention keeps them")
        clock.advance(by: .seconds(7200))
        try await log.applyRetention()
        #expect(try Self.starts(fileSystem, "/a/wal") == [all[all.count - 1]])
        let archived = try Self.starts(fileSystem, "/archive")
        #expect(archived == Array(all.dropLast()))
        for start in archived {
            let name = SegmentHeader.fileName(firstSequence: start)
            #expect(fileSystem.contents("/archive/\(name)") == originals[start] ?? nil, "\(name) arrived byte for byte")
        }
        let verified = try LogVerifier.verify(walDirectory: "/archive", fileSystem: fileSystem)
        #expect(verified.isClean && verified.firstSequence == 1 && verified.lastSequence == all[all.count - 1] - 1, "\(verified)")
        #expect(await log.stats.segmentsArchived == archived.count)
        let events = try Self.readMerged(fileSystem, wal: "/a/wal", archive: "/archive")
        #expect(events.map(\.sequence) == Array(1..<end))
        #expect(events.map(\.event) == (1...Int64(end - 1)).map { TestEvents.tracking($0) })
        await log.close()
    }

    @Test(
        "a cursor commit never waits for the writer: while a group commit's fdatasync hangs the consumer goes on, and the next commit deletes what it passed"
    )
    func cursorCommitDoesNotWaitForTheWriter() async throws {
        let configuration = LogConfiguration(segmentBytes: 1200, compressionLevel: 0, retention: .none)
        let (fileSystem, _, log) = try await Self.openFilled("/w", configuration, batches: 4)
        let all = try Self.starts(fileSystem, "/w/wal")
        // The segments' syncs hang (a slow disk), the cursors' do not.
        fileSystem.holdSynchronize(pathsContaining: "/w/wal/0")
        let held = Task { try await log.append(Self.batch(4)) }
        try await waitFor("the group commit's fdatasync to hang") { fileSystem.synchronizeCallsWaiting == 1 }
        let returned = Flag()
        let moved = Task {
            try await log.commitCursor("uploader", to: all[2])
            returned.set()
        }
        try await waitFor("the cursor commit to return while the group commit hangs", seconds: 10) { returned.isSet }
        #expect(fileSystem.synchronizeCallsWaiting == 1, "the group commit still hangs")
        #expect(Array(try Self.starts(fileSystem, "/w/wal").prefix(2)) == Array(all.prefix(2)), "nothing is deleted while the writer is away")
        // Released before waiting for the cursor commit: one that waits for the writer fails the
        // test above instead of hanging it.
        fileSystem.releaseSynchronize()
        try await moved.value
        _ = try await held.value
        // The next group commit deletes the two passed segments on the writer's thread.
        _ = try await log.append([TestEvents.tracking(501)])
        #expect(try Self.starts(fileSystem, "/w/wal").first == all[2])
        await log.close()
    }

    @Test("while a segment is copied into the archive on a slow disk, appends are acknowledged: the copy is not on the writer's thread")
    func archiveCopyDoesNotHoldCommits() async throws {
        let configuration = Self.archiving
        let (fileSystem, clock, log) = try await Self.openFilled("/s", configuration, batches: 4)
        let all = try Self.starts(fileSystem, "/s/wal")
        try await log.commitCursor("uploader", to: await log.durableSequence)
        clock.advance(by: .seconds(7200))
        fileSystem.holdSynchronize(pathsContaining: "/archive/")
        let pass = Task { try await log.applyRetention() }
        try await waitFor("the archive copy's fdatasync to wait") { fileSystem.synchronizeCallsWaiting == 1 }
        let appended = Task { try await log.append(Self.batch(4)) }
        try await waitFor("the append to be acknowledged while the copy waits") { await log.durableSequence > all[all.count - 1] + 100 }
        #expect(fileSystem.synchronizeCallsWaiting == 1, "the copy still waits")
        #expect(try Self.starts(fileSystem, "/s/wal").first == all[0], "nothing left the log before its copy was durable")
        fileSystem.releaseSynchronize()
        try await pass.value
        _ = try await appended.value
        #expect(try Self.starts(fileSystem, "/archive") == Array(all.dropLast()))
        #expect(try Self.starts(fileSystem, "/s/wal").first == all[all.count - 1])
        await log.close()
    }

    @Test("four copies of one segment into one archive at once: each succeeds, and the archive holds the segment's bytes, never a mix")
    func concurrentCopiesIntoOneArchive() async throws {
        // 48 KiB copied 4 KiB at a time, every byte depending on its offset: each copy makes 12
        // writes, so copies interleave, and bytes from the wrong offset would show.
        let bytes = (0..<(48 << 10)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
        let name = SegmentHeader.fileName(firstSequence: 1)
        for round in 0..<40 {
            let fileSystem = SimulatedFileSystem()
            try fileSystem.createDirectory("/log")
            let source = try fileSystem.open("/log/\(name)", create: true)
            try source.write(bytes, at: 0)
            try source.synchronizeData()
            source.close()
            let archive = SegmentArchive(directory: "/archive", fileSystem: fileSystem, chunkBytes: 4096)
            let outcomes = await withTaskGroup(of: String.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        do { return try archive.store(segmentAt: "/log/\(name)", name: name).rawValue } catch { return "\(error)" }
                    }
                }
                var collected: [String] = []
                for await outcome in group { collected.append(outcome) }
                return collected
            }
            #expect(outcomes.allSatisfy { $0 == "copied" || $0 == "alreadyArchived" }, "round \(round): \(outcomes)")
            #expect(fileSystem.contents("/archive/\(name)") == bytes, "round \(round): the archived copy is the segment's bytes")
        }
    }

    @Test("a power loss anywhere in an archive move, then the next pass: every event in the log or the archive, once; the archive verifies clean")
    func crashDuringArchiveMove() async throws {
        // 210 open, fill, crash and reopen cycles compute for seconds: on a thread of their own,
        // not on the cooperative pool the other suites wait on.
        try await Self.simulation.run { try await crashesDuringArchiveMove() }
    }

    static let simulation = DedicatedThreadExecutor(name: "archive-move-crashes")

    func crashesDuringArchiveMove() async throws {
        var crashesDuringThePass = 0
        var outcomes: [String: Int] = [:]
        for crashPoint in 1...70 {
            for seed in 0..<3 {
                var random = SeededGenerator(seed: UInt64(crashPoint * 10 + seed))
                let configuration = Self.archiving
                let (fileSystem, clock, log) = try await Self.openFilled("/c", configuration, batches: 10)
                let all = try Self.starts(fileSystem, "/c/wal")
                let end = await log.durableSequence
                try await log.commitCursor("uploader", to: end)
                // The move of every passed segment (copy, fdatasync, rename, directory sync,
                // delete, directory sync) is crashed into at operation `crashPoint`.
                fileSystem.crash(afterOperations: crashPoint)
                clock.advance(by: .seconds(7200))
                do {
                    try await log.applyRetention()
                    outcomes["pass finished", default: 0] += 1
                } catch {
                    outcomes["pass crashed", default: 0] += 1
                }
                if fileSystem.hasCrashed { crashesDuringThePass += 1 }
                await log.close()
                fileSystem.crashNow()
                let recovered = fileSystem.crashedCopy(using: &random)

                let reopened = try await WriteAheadLog.open(
                    dataDirectory: "/c", configuration: configuration, fileSystem: recovered, logger: quietLogger, wallClock: clock.reading)
                try await reopened.applyRetention()
                let label = "crash point \(crashPoint), seed \(seed)"
                let inLog = try Self.starts(recovered, "/c/wal")
                let inArchive = recovered.exists("/archive") ? try Self.starts(recovered, "/archive") : []
                #expect(inLog == [all[all.count - 1]], "\(label): the log keeps only its active segment: \(inLog)")
                #expect(Set(inLog).isDisjoint(with: inArchive), "\(label): a segment in both places")
                #expect(inArchive == Array(all.dropLast()), "\(label): the archive holds every moved segment: \(inArchive)")
                let verified = try LogVerifier.verify(walDirectory: "/archive", fileSystem: recovered)
                #expect(verified.isClean && verified.missingSequences == 0, "\(label): \(verified)")
                let events = try Self.readMerged(recovered, wal: "/c/wal", archive: "/archive")
                #expect(events.map(\.sequence) == Array(1..<end), "\(label): lost or duplicated")
                #expect(events.map(\.event) == (1...Int64(end - 1)).map { TestEvents.tracking($0) }, "\(label): changed")
                await reopened.close()
            }
        }
        print("archive moves crashed into: \(crashesDuringThePass) of 210 runs crashed during the pass; \(outcomes)")
        #expect(crashesDuringThePass >= 150, "the crash points must land inside the move")
    }

}

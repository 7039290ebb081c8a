import RelayCore
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// Damage on a real on-disk log: torn tails, bit flips, damaged cursors, leftover temporary files.
@Suite("Recovery of a damaged log on disk", .tier(.fast))
struct RecoveryTests {
    let fileSystem = PosixFileSystem()

    func open(_ directory: String, _ configuration: LogConfiguration = LogConfiguration()) async throws -> WriteAheadLog {
        try await WriteAheadLog.open(dataDirectory: directory, configuration: configuration, logger: quietLogger)
    }

    /// Appends `batches` batches of 100 events (ids from 1) and returns the segment paths.
    func fill(_ directory: String, batches: Int, configuration: LogConfiguration = LogConfiguration()) async throws -> [String] {
        let log = try await open(directory, configuration)
        for batch in 0..<batches {
            _ = try await log.append((1...100).map { TestEvents.tracking(Int64(batch * 100) + $0) })
        }
        await log.close()
        let wal = LogLayout(dataDirectory: directory).walDirectory
        return try fileSystem.listDirectory(wal).filter { $0.hasSuffix(".wal") }.sorted().map { "\(wal)/\($0)" }
    }

    func flip(_ path: String, at offset: Int64) throws {
        let handle = try fileSystem.open(path, create: false)
        defer { handle.close() }
        var byte = try handle.read(at: offset, count: 1)
        byte[0] ^= 0x10
        try handle.write(byte, at: offset)
    }

    /// The end of the header and frames of a segment (its unused preallocation excluded).
    func dataEnd(_ directory: String) throws -> Int64 {
        try LogVerifier.verify(walDirectory: LogLayout(dataDirectory: directory).walDirectory).bytes
    }

    @Test("a torn tail is kept in quarantine and removed: zeroed inside preallocated space, else cut off", arguments: [true, false])
    func tornTail(preallocate: Bool) async throws {
        let directory = temporaryDirectory("torn")
        defer { removeTree(directory) }
        let configuration = LogConfiguration(preallocateSegments: preallocate)
        let segment = try #require(try await fill(directory, batches: 3, configuration: configuration).first)
        let validSize = try dataEnd(directory)
        let fileSize = try fileSystem.open(segment, create: false).size()
        #expect(fileSize == (preallocate ? configuration.preallocationStep : validSize))
        // Half of a frame, as a crash in the middle of a write leaves it.
        let frame = Frame.encode((1...50).map { TestEvents.tracking(10_000 + $0) }, firstSequence: 301, compressionLevel: 1)
        let torn = Array(frame.prefix(frame.count / 2))
        #expect(torn.last != 0, "the torn bytes end in a non-zero byte, so all of them count as damage")
        let handle = try fileSystem.open(segment, create: false)
        try handle.write(torn, at: validSize)
        handle.close()

        let log = try await open(directory, configuration)
        let report = log.recoveryReport
        #expect(report.truncatedBytes == Int64(torn.count))
        #expect(report.damage.map(\.kind) == [.tornTail])
        #expect(report.damage.first?.range == validSize..<(validSize + Int64(torn.count)))
        #expect(await log.durableSequence == 301)
        let repaired = try fileSystem.open(segment, create: false)
        // Preallocated space stays allocated, with zeros where the torn bytes were.
        #expect(try repaired.size() == fileSize)
        #expect(try repaired.read(at: validSize, count: torn.count) == (preallocate ? [UInt8](repeating: 0, count: torn.count) : []))
        repaired.close()
        let quarantined = try fileSystem.listDirectory("\(directory)/quarantine").sorted()
        #expect(quarantined == ["00000000000000000001.wal@\(validSize).bin", "00000000000000000001.wal@\(validSize).txt"])
        #expect(try fileSystem.readFile("\(directory)/quarantine/00000000000000000001.wal@\(validSize).bin") == torn)
        _ = try await log.append([TestEvents.tracking(301)])
        await log.close()
        let (events, damage) = try readAll(directory, fileSystem: fileSystem)
        #expect(events.map(\.sequence) == Array(1...301))
        #expect(damage.isEmpty)
        let reopened = try await open(directory, configuration)
        #expect(reopened.recoveryReport.damage.isEmpty)
        #expect(await reopened.durableSequence == 302)
        await reopened.close()
    }

    @Test("zeros in the middle of the data are damage, not the end: the frames after them are still read")
    func zeroedFrameIsNotTheEnd() async throws {
        let directory = temporaryDirectory("zeroed")
        defer { removeTree(directory) }
        let segment = try #require(try await fill(directory, batches: 3).first)
        let starts = try frameStartOffsets(fileSystem.readFile(segment))
        #expect(starts.count == 3)
        // Media damage that reads back as zeros, over the whole second frame.
        let handle = try fileSystem.open(segment, create: false)
        try handle.write([UInt8](repeating: 0, count: starts[2] - starts[1]), at: Int64(starts[1]))
        handle.close()

        let log = try await open(directory)
        #expect(log.recoveryReport.damage.map(\.kind) == [.corruptFrame])
        #expect(log.recoveryReport.damage.first?.range == Int64(starts[1])..<Int64(starts[2]))
        #expect(await log.durableSequence == 301)
        await log.close()
        let (events, _) = try readAll(directory, fileSystem: fileSystem)
        #expect(events.map(\.sequence) == Array(1...100) + Array(201...300))
    }

    @Test("a bit flip in the middle of a segment: detected, counted, quarantined, the rest readable")
    func bitFlipInTheMiddle() async throws {
        let directory = temporaryDirectory("bitflip")
        defer { removeTree(directory) }
        let segment = try #require(try await fill(directory, batches: 5).first)
        // Find the third frame and damage its payload.
        let frameStarts = try frameStartOffsets(fileSystem.readFile(segment))
        #expect(frameStarts.count == 5)
        try flip(segment, at: Int64(frameStarts[2] + FrameHeader.size + 7))

        let report = try LogVerifier.verify(walDirectory: LogLayout(dataDirectory: directory).walDirectory)
        #expect(report.corruptFrames == 1)
        #expect(report.frames == 4)
        #expect(report.events == 400)
        #expect(report.missingSequences == 100)
        #expect(!report.isClean)

        let log = try await open(directory)
        #expect(log.recoveryReport.damage.map(\.kind) == [.corruptFrame])
        #expect(log.recoveryReport.damage.first?.range == Int64(frameStarts[2])..<Int64(frameStarts[3]))
        #expect(log.recoveryReport.truncatedBytes == 0)
        #expect(await log.durableSequence == 501)
        let appended = try await log.append([TestEvents.tracking(501)])
        #expect(appended == 501..<502)
        await log.close()
        #expect(fileSystem.exists("\(directory)/quarantine/00000000000000000001.wal@\(frameStarts[2]).bin"))

        let (events, damage) = try readAll(directory, fileSystem: fileSystem)
        #expect(events.map(\.sequence) == Array(1...200) + Array(301...501))
        #expect(events.compactMap { TestEvents.id(of: $0.event) } == Array(1...200) + Array(301...501))
        #expect(damage.map(\.kind) == [.corruptFrame])
    }

    @Test("a bit flip in a sealed segment's frame header is skipped by readers")
    func bitFlipInSealedSegment() async throws {
        let directory = temporaryDirectory("sealed")
        defer { removeTree(directory) }
        let segments = try await fill(directory, batches: 6, configuration: LogConfiguration(segmentBytes: 1200, compressionLevel: 0))
        #expect(segments.count >= 3)
        try flip(segments[0], at: Int64(SegmentHeader.size + 10))
        let log = try await open(directory)
        await log.close()
        let (events, damage) = try readAll(directory, fileSystem: fileSystem)
        #expect(damage.count == 1)
        #expect(damage.first?.segment == "00000000000000000001.wal")
        #expect(events.count == 500)
        #expect(events.first?.sequence == 101)
    }

    @Test("one flipped bit anywhere in a large group commit costs at most one frame of 4,096 events; restored, nothing is lost")
    func bitFlipBlastRadius() async throws {
        let directory = temporaryDirectory("blast")
        defer { removeTree(directory) }
        // One append of 20,000 small events: one group commit, which the writer splits into frames
        // of at most 4,096 events (1 MiB of encoding would hold all 20,000 in one).
        let log = try await open(directory)
        _ = try await log.append((1...20_000).map { TestEvents.tracking($0) })
        await log.close()
        let wal = LogLayout(dataDirectory: directory).walDirectory
        let segment = "\(wal)/" + (try #require(try fileSystem.listDirectory(wal).first { $0.hasSuffix(".wal") }))
        let clean = try LogVerifier.verify(walDirectory: wal)
        #expect(clean.events == 20_000)
        #expect(clean.frames == 5)
        var random = SeededGenerator(seed: 16)
        var mostLost = 0
        for _ in 0..<40 {
            let offset = Int64.random(in: 0..<clean.bytes, using: &random)
            try flip(segment, at: offset)
            let damaged = try LogVerifier.verify(walDirectory: wal)
            try flip(segment, at: offset)
            mostLost = max(mostLost, 20_000 - damaged.events)
            #expect(20_000 - damaged.events <= Frame.maximumEvents, "a flip at offset \(offset) lost \(20_000 - damaged.events) events")
        }
        #expect(mostLost > 0, "some flips must land in frames")
        #expect(try LogVerifier.verify(walDirectory: wal).events == 20_000)
    }

    @Test("a damaged cursor file is quarantined and reset to 0, so nothing is deleted too early")
    func damagedCursor() async throws {
        let directory = temporaryDirectory("cursor")
        defer { removeTree(directory) }
        let log = try await open(directory)
        _ = try await log.append([TestEvents.tracking(1)])
        try await log.registerCursor("aggregator")
        try await log.commitCursor("aggregator", to: 2)
        await log.close()
        try flip("\(directory)/wal/cursors/aggregator.cursor", at: 9)
        let reopened = try await open(directory)
        #expect(await reopened.cursorPosition("aggregator") == 0)
        await reopened.close()
        #expect(fileSystem.exists("\(directory)/quarantine/cursor-aggregator@0.bin"))
    }

    @Test("leftover temporary files of an interrupted roll are removed; a second writer is refused")
    func temporaryFilesAndLock() async throws {
        let directory = temporaryDirectory("tmp")
        defer { removeTree(directory) }
        _ = try await fill(directory, batches: 1)
        let leftover = "\(directory)/wal/00000000000000000101.wal.tmp"
        let handle = try fileSystem.open(leftover, create: true)
        try handle.write(SegmentHeader(firstSequence: 101, createdAtNanoseconds: 0).encoded(), at: 0)
        handle.close()
        let log = try await open(directory)
        #expect(log.recoveryReport.removedTemporaryFiles == ["00000000000000000101.wal.tmp"])
        #expect(!fileSystem.exists(leftover))
        await #expect {
            _ = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        } throws: { error in
            guard case LogError.locked = error else { return false }
            return true
        }
        await log.close()
    }

    @Test("closing the log's lock releases it at once, even while a copy of the descriptor lives on (a child being spawned holds one until exec)")
    func lockReleasedDespiteACopiedDescriptor() async throws {
        let directory = temporaryDirectory("lock-copy")
        defer { removeTree(directory) }
        let lockFile = LogLayout(dataDirectory: directory).lockFile
        try PosixFileSystem().createDirectory(LogLayout(dataDirectory: directory).walDirectory)
        let held = try #require(try PosixFileSystem().lockExclusively(lockFile) as? PosixFileHandle)
        // What a process spawned by another thread right now gets: a copy of the descriptor, the
        // same open file description.
        let copy = dup(held.descriptor)
        try #require(copy >= 0)
        defer { close(copy) }
        held.close()
        let again = try PosixFileSystem().lockExclusively(lockFile)
        #expect(again != nil)
        again?.close()
    }

    @Test("a lock held for a moment by another open file is waited for; one held past lockWait is refused after the wait")
    func lockHeldForAMoment() async throws {
        let directory = temporaryDirectory("lockwait")
        defer { removeTree(directory) }
        _ = try await fill(directory, batches: 1)
        let lockFile = LogLayout(dataDirectory: directory).lockFile
        // A second open file description of the lock file conflicts with flock like a forked child
        // that still holds the writer's description until it calls exec.
        // Taking it can itself meet that moment (a child another test is starting), so it retries.
        var taken: (any FileHandle)?
        let deadline = ContinuousClock.now.advanced(by: .seconds(5))
        while taken == nil {
            do {
                taken = try fileSystem.lockExclusively(lockFile)
            } catch {
                guard error.errno == EWOULDBLOCK, ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        let otherHolder = try #require(taken)
        let release = Task {
            try await Task.sleep(for: .milliseconds(150))
            otherHolder.close()
        }
        let clock = ContinuousClock()
        let started = clock.now
        let log = try await open(directory, LogConfiguration(lockWait: .seconds(30)))
        let waited = clock.now - started
        try await release.value
        #expect(waited >= .milliseconds(150))
        #expect(await log.durableSequence == 101)

        let refusedAfter = clock.now
        await #expect {
            _ = try await WriteAheadLog.open(
                dataDirectory: directory, configuration: LogConfiguration(lockWait: .milliseconds(200)), logger: quietLogger)
        } throws: { error in
            guard case LogError.locked = error else { return false }
            return true
        }
        #expect(clock.now - refusedAfter >= .milliseconds(200))
        await log.close()
    }
}

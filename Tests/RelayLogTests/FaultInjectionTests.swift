import RelayCore
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// Injected fdatasync failures, disk-full writes and the size limit: no acknowledgement, no
/// corruption, and appends work again afterwards.
@Suite("Fault injection", .tier(.fast))
struct FaultInjectionTests {
    let dataDirectory = "/data"

    /// 64 KiB segments keep the in-memory file system's copies cheap; they are preallocated like real ones.
    func open(_ fileSystem: SimulatedFileSystem, _ configuration: LogConfiguration = LogConfiguration(segmentBytes: 64 << 10)) async throws
        -> WriteAheadLog
    {
        try await WriteAheadLog.open(dataDirectory: dataDirectory, configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
    }

    @Test("fdatasync failure: not acknowledged, segment abandoned, next append in a new segment")
    func fdatasyncFailure() async throws {
        let fileSystem = SimulatedFileSystem()
        let log = try await open(fileSystem)
        let first = try await log.append((1...5).map { TestEvents.tracking($0) })
        #expect(first == 1..<6)

        fileSystem.fail(.synchronizeData, errno: EIO)
        await #expect(throws: LogError.self) { try await log.append((6...8).map { TestEvents.tracking($0) }) }
        do {
            _ = try await log.append([TestEvents.tracking(99)])
        } catch {
            Issue.record("append after a failed fdatasync must work in a new segment: \(error)")
        }
        let third = try await log.append((9...10).map { TestEvents.tracking($0) })
        // The failed batch's sequence numbers are reused: no gap, nothing acknowledged twice.
        #expect(third == 7..<9)
        let segments = try fileSystem.listDirectory("/data/wal").filter { $0.hasSuffix(".wal") }.sorted()
        #expect(segments == ["00000000000000000001.wal", "00000000000000000006.wal"])
        await log.close()

        let (events, _) = try readAll(dataDirectory, fileSystem: fileSystem)
        #expect(events.map(\.sequence) == Array(1...8))
        #expect(events.compactMap { TestEvents.id(of: $0.event) } == [1, 2, 3, 4, 5, 99, 9, 10])
    }

    /// The one call that makes an acknowledgement durable is made for real: `fdatasync` of
    /// `/dev/null` fails with EINVAL on Linux (a character device has no data to sync), so a
    /// ``PosixFileHandle/synchronizeData()`` that reaches the kernel throws, naming the call,
    /// and one that skips it (a no-op) does not.
    @Test("the real file system's synchronizeData calls fdatasync: on /dev/null it fails with EINVAL, naming fdatasync and the path")
    func realFdatasyncReachesTheKernel() throws {
        let handle = try PosixFileSystem().open("/dev/null", create: false)
        defer { handle.close() }
        #expect {
            try handle.synchronizeData()
        } throws: { error in
            guard let failure = error as? FileSystemError else { return false }
            return failure.operation == "fdatasync" && failure.path == "/dev/null" && failure.errno == EINVAL
        }
    }

    @Test("fdatasync failure whose frame still reached the disk: the frame is superseded, never read")
    func fdatasyncFailureFrameOnDisk() async throws {
        let fileSystem = SimulatedFileSystem()
        let log = try await open(fileSystem)
        _ = try await log.append((1...3).map { TestEvents.tracking($0) })
        // The sync fails, and so do the truncation and the fresh descriptor's sync that try to
        // cut the frame back: the unacknowledged frame stays in the old segment.
        fileSystem.fail(.synchronizeData, errno: EIO, times: 2)
        fileSystem.fail(.truncate, errno: EIO, times: 1)
        await #expect(throws: LogError.self) { try await log.append([TestEvents.tracking(4)]) }
        let after = try await log.append([TestEvents.tracking(5)])
        #expect(after == 4..<5)
        await log.close()

        let old = try #require(fileSystem.contents("/data/wal/00000000000000000001.wal"))
        #expect(old.count > SegmentHeader.size + 2 * FrameHeader.size, "the failed frame is still in the old segment")
        let (events, damage) = try readAll(dataDirectory, fileSystem: fileSystem)
        #expect(events.compactMap { TestEvents.id(of: $0.event) } == [1, 2, 3, 5])
        #expect(damage.map(\.kind) == [.superseded])
        let reopened = try await open(fileSystem)
        #expect(await reopened.durableSequence == 5)
        await reopened.close()
    }

    @Test("disk full on write: not acknowledged, nothing half-written, appends resume")
    func diskFull() async throws {
        let fileSystem = SimulatedFileSystem()
        let log = try await open(fileSystem)
        _ = try await log.append((1...4).map { TestEvents.tracking($0) })
        let dataEnd = Int(await log.dataBytes)
        let dataBefore = try #require(fileSystem.contents("/data/wal/00000000000000000001.wal")).prefix(dataEnd)

        fileSystem.fail(.write, errno: ENOSPC, times: 3)
        for id in Int64(100)...102 {
            await #expect {
                try await log.append([TestEvents.tracking(id)])
            } throws: { error in
                guard case LogError.writeFailed(let cause) = error else { return false }
                return cause.errno == ENOSPC
            }
        }
        // The frames before are intact and only zeros (or nothing) follow them.
        let after = try #require(fileSystem.contents("/data/wal/00000000000000000001.wal"))
        #expect(after.prefix(dataEnd) == dataBefore)
        #expect(after.dropFirst(dataEnd).allSatisfy { $0 == 0 })
        #expect(await log.dataBytes == Int64(dataEnd))
        let resumed = try await log.append([TestEvents.tracking(5)])
        #expect(resumed == 5..<6)
        await log.close()
        let (events, damage) = try readAll(dataDirectory, fileSystem: fileSystem)
        #expect(events.compactMap { TestEvents.id(of: $0.event) } == [1, 2, 3, 4, 5])
        #expect(damage.isEmpty)
    }

    @Test("log full: appends fail fast with the sizes, consumers catching up frees space")
    func logFull() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = LogConfiguration(segmentBytes: 2048, maximumLogBytes: 6000, compressionLevel: 0)
        let log = try await open(fileSystem, configuration)
        try await log.registerCursor("consumer")
        var accepted: [Int64] = []
        var refusal: LogError?
        for id in Int64(1)...400 {
            do {
                _ = try await log.append([TestEvents.tracking(id)])
                accepted.append(id)
            } catch {
                refusal = error
                break
            }
        }
        guard case .logFull(let used, let limit) = try #require(refusal) else {
            Issue.record("expected logFull, got \(String(describing: refusal))")
            return
        }
        #expect(limit == 6000)
        #expect(used <= 6000)
        #expect(await log.diskBytes <= 6000)
        // Still full on retry: fail fast, never block.
        await #expect(throws: LogError.self) { try await log.append([TestEvents.tracking(1000)]) }

        // The consumer passes everything: sealed segments are deleted and appends work again.
        try await log.commitCursor("consumer", to: await log.durableSequence)
        let resumed = try await log.append([TestEvents.tracking(1001)])
        #expect(resumed.lowerBound == UInt64(accepted.count) + 1)
        await log.close()
        let (events, _) = try readAll(dataDirectory, fileSystem: fileSystem, from: resumed.lowerBound)
        #expect(events.compactMap { TestEvents.id(of: $0.event) } == [1001])
    }

    @Test("a crash right after an fdatasync failure keeps every acknowledged event and no duplicate sequence", arguments: 0..<40)
    func crashAfterSyncFailure(seed: Int) async throws {
        var random = SeededGenerator(seed: UInt64(seed))
        let fileSystem = SimulatedFileSystem()
        let log = try await open(fileSystem, LogConfiguration(segmentBytes: 4096))
        var acknowledged: [UInt64: Int64] = [:]
        var nextId: Int64 = 1
        for round in 0..<6 {
            if round == 3 { fileSystem.fail(.synchronizeData, errno: EIO, times: Int.random(in: 1...3, using: &random)) }
            let batch = (0..<Int64.random(in: 1...5, using: &random)).map { TestEvents.tracking(nextId + $0) }
            nextId += Int64(batch.count)
            if let range = try? await log.append(batch) {
                for (offset, sequence) in range.enumerated() { acknowledged[sequence] = TestEvents.id(of: batch[offset]) }
            }
        }
        fileSystem.crashNow()
        let recovered = fileSystem.crashedCopy(using: &random)
        let reopened = try await open(recovered)
        let (events, _) = try readAll(dataDirectory, fileSystem: recovered)
        #expect(Set(events.map(\.sequence)).count == events.count)
        #expect(events.map(\.sequence) == events.map(\.sequence).sorted())
        let present = Dictionary(uniqueKeysWithValues: events.map { ($0.sequence, TestEvents.id(of: $0.event)) })
        for (sequence, id) in acknowledged {
            #expect(present[sequence] == id, "seed \(seed): acknowledged \(id) at \(sequence)")
        }
        await reopened.close()
    }

    @Test("a roll that fails after its rename (the directory sync): later appends never go on in the previous segment, which the new one supersedes")
    func rollFailsAfterRename() async throws {
        let fileSystem = SimulatedFileSystem()
        // 4 KiB segments: 2,000 uncompressed events need a roll; 3 still fit the first segment.
        let log = try await open(fileSystem, LogConfiguration(segmentBytes: 4096, compressionLevel: 0, preallocateSegments: false))
        _ = try await log.append((1...5).map { TestEvents.tracking($0) })
        // The roll writes, syncs and renames 00000000000000000006.wal; its directory sync fails.
        fileSystem.fail(.synchronizeDirectory, errno: EIO)
        await #expect(throws: LogError.self) { try await log.append((100...2099).map { TestEvents.tracking($0) }) }
        let acknowledged = try await log.append((300...302).map { TestEvents.tracking($0) })
        #expect(acknowledged == 6..<9)
        await log.close()

        let (events, _) = try readAll(dataDirectory, fileSystem: fileSystem)
        #expect(events.map(\.sequence) == Array(1...8))
        #expect(events.compactMap { TestEvents.id(of: $0.event) } == [1, 2, 3, 4, 5, 300, 301, 302], "every acknowledged event is read back")
    }
}

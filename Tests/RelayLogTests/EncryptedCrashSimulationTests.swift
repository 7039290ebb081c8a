import Foundation
import RelayCore
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// Simulated power losses in an encrypted log (the workload of ``CrashSimulationTests``): every
/// frame written to a segment file is recorded, and no (salt, first sequence) pair, which fixes
/// the AES-GCM key and nonce of a frame, is ever used for two different frames. The frames a crash
/// left unsynced are written again after the reopen, at the same first sequence numbers: they must
/// be sealed under another salt; so must the commit after an fdatasync that failed (one seed in
/// four injects one). Every acknowledged event must survive, as without encryption.
@Suite("Encrypted log under simulated power loss", .tier(.fast))
struct EncryptedCrashSimulationTests {
    /// 2 shards × 250 seeds (about 5 s on two cores); `CAMPAIGN_RELAY_ENCRYPTED_CRASH_SEEDS_PER_SHARD` runs more.
    static let shards = [0, 1]
    static let seedsPerShard = ProcessInfo.processInfo.environment["CAMPAIGN_RELAY_ENCRYPTED_CRASH_SEEDS_PER_SHARD"].flatMap { Int($0) } ?? 250
    /// Seeds of their own, away from those of ``CrashSimulationTests``.
    static let firstSeed: UInt64 = 7_000_000

    static let executors = [DedicatedThreadExecutor(name: "encrypted-power-loss-a"), DedicatedThreadExecutor(name: "encrypted-power-loss-b")]

    static let keys = encryptionTestRing(("k1", 1))

    /// What the frames of all seeds of a shard showed.
    typealias Tally = SealedFrameTally

    @Test(
        "no (salt, first sequence) seals two different frames across power losses; frames a crash lost are sealed again under another salt",
        arguments: shards)
    func nonceNeverReused(shard: Int) async throws {
        var tally = Tally()
        for index in 0..<Self.seedsPerShard {
            let seed = Self.firstSeed + UInt64(shard * Self.seedsPerShard + index)
            let (frames, duringWork) = try await Self.executors[shard % 2].run { try await runOneCrash(seed: seed) }
            tally.add(frames, seed: seed, crashedDuringWork: duringWork)
        }
        print("encrypted power loss, shard \(shard): \(tally)")
        #expect(tally.reusedNonces.isEmpty, "\(tally.reusedNonces.prefix(10))")
        #expect(tally.framesInTheClear == 0)
        #expect(tally.crashesDuringWork >= Self.seedsPerShard * 85 / 100, "\(tally)")
        // The property is not vacuous: crashes made the log seal frames again at first sequence
        // numbers it had sealed before, which with a salt that is not renewed would reuse nonces.
        #expect(tally.sequencesRewrittenAcrossSessions > 0, "\(tally)")
        #expect(tally.sequencesRewrittenWithinASession > 0, "\(tally)")
        #expect(tally.sequencesUnderSeveralSalts > 0, "\(tally)")
    }

    @Test("the check finds a reused nonce: one sealer sealing two different frames at one first sequence, unless its salt is renewed between")
    func checkFindsNonceReuse() throws {
        for renewing in [false, true] {
            let recorder = FrameWriteRecorder()
            var sealer = FrameSealer(key: Self.keys.newest)
            let lost = try Frame.encode((1...3).map { TestEvents.tracking($0) }, firstSequence: 10, compressionLevel: 1, sealer: sealer)
            recorder.record(lost, path: "/data/wal/00000000000000000001.wal")
            if renewing { sealer.renew() }
            let again = try Frame.encode([TestEvents.tracking(99)], firstSequence: 10, compressionLevel: 1, sealer: sealer)
            recorder.record(again, path: "/data/wal/00000000000000000001.wal")
            var tally = Tally()
            tally.add(recorder.frames, seed: 0, crashedDuringWork: false)
            #expect(tally.framesWritten == 2)
            #expect(tally.framesInTheClear == 0)
            #expect(tally.reusedNonces.count == (renewing ? 0 : 1))
            #expect(tally.sequencesUnderSeveralSalts == (renewing ? 1 : 0))
            #expect(tally.sequencesRewrittenWithinASession == (renewing ? 1 : 0))
        }
    }

    /// Runs the workload of ``CrashSimulationTests`` on an encrypted log until its simulated crash,
    /// recovers, checks what was acknowledged, appends after a reopen, and returns every frame
    /// written to a segment meanwhile (sessions 0: before the crash, 1: after it, 2: after a clean
    /// reopen), and whether the crash landed inside the work.
    func runOneCrash(seed: UInt64) async throws -> (frames: [WrittenFrame], duringWork: Bool) {
        var random = SeededGenerator(seed: seed)
        let simulated = SimulatedFileSystem()
        let recorder = FrameWriteRecorder()
        let fileSystem = RecordingFileSystem(base: simulated, recorder: recorder)
        let dataDirectory = "/data"
        let losesPowerInASync = seed % 8 == 1
        var configuration = LogConfiguration(
            segmentBytes: 1024 + Int64.random(in: 0...3072, using: &random), compressionLevel: losesPowerInASync ? 0 : 1,
            preallocateSegments: seed % 4 != 3, preallocationStep: Int64.random(in: 256...2048, using: &random), retention: .none
        )
        configuration.encryption = Self.keys
        // One seed in four also fails an fdatasync (EIO) early in the work and goes on appending: the
        // commit after a failed one seals its first sequence number again, in the same session.
        let failedSyncStep = seed % 4 == 2 ? Int.random(in: 0..<8, using: &random) : nil
        if seed % 16 == 5 {
            simulated.crash(onOperation: .remove, occurrence: Int.random(in: 1...2, using: &random))
        } else if losesPowerInASync {
            simulated.crash(onOperation: .synchronizeData, occurrence: Int.random(in: 1...30, using: &random))
        } else {
            simulated.crash(afterOperations: Int.random(in: 1...140, using: &random))
        }

        var acknowledged: [UInt64: Int64] = [:]
        var attempted = Set<Int64>()
        var committedCursor: UInt64 = 0
        var nextId: Int64 = 1
        if let log = try? await WriteAheadLog.open(
            dataDirectory: dataDirectory, configuration: configuration, consumers: [.cursorFile("consumer")], fileSystem: fileSystem,
            logger: quietLogger)
        {
            committedCursor = 1
            work: for step in 0..<40 {
                if step == failedSyncStep { simulated.fail(.synchronizeData, errno: EIO, times: 1) }
                let appenders = Int.random(in: 1...3, using: &random)
                var batches: [[Event]] = []
                for _ in 0..<appenders {
                    let size = Int.random(in: losesPowerInASync ? 20...80 : 1...12, using: &random)
                    batches.append((0..<size).map { offset in TestEvents.tracking(nextId + Int64(offset)) })
                    for offset in 0..<size { attempted.insert(nextId + Int64(offset)) }
                    nextId += Int64(size)
                }
                let results = await appendConcurrently(batches, to: log)
                var failed = false
                for (index, result) in results {
                    switch result {
                    case .success(let range):
                        for (offset, sequence) in range.enumerated() {
                            guard let id = TestEvents.id(of: batches[index][offset]) else { continue }
                            #expect(acknowledged[sequence] == nil, "seed \(seed): sequence \(sequence) acknowledged twice")
                            acknowledged[sequence] = id
                        }
                    case .failure(let error):
                        if case .sealingFailed = error { Issue.record("seed \(seed): sealing failed: \(error)") }
                        failed = true
                    }
                }
                // A failure that is no crash (the injected EIO) is followed by more appends.
                if failed, simulated.hasCrashed || failedSyncStep == nil { break work }
                if step % 3 == 2, let maxAcked = acknowledged.keys.max() {
                    let target = UInt64.random(in: committedCursor...(maxAcked + 1), using: &random)
                    do {
                        try await log.commitCursor("consumer", to: target)
                        committedCursor = target
                    } catch {
                        if simulated.hasCrashed || failedSyncStep == nil { break work }
                    }
                }
            }
            await log.close()
        }
        let duringWork = simulated.hasCrashed
        simulated.crashNow()

        // Power loss, then a new writer session on what the disk kept.
        let recovered = RecordingFileSystem(base: simulated.crashedCopy(using: &random), recorder: recorder)
        recorder.session.store(1, ordering: .relaxed)
        let log: WriteAheadLog
        do {
            log = try await WriteAheadLog.open(dataDirectory: dataDirectory, configuration: configuration, fileSystem: recovered, logger: quietLogger)
        } catch {
            Issue.record("seed \(seed): reopening the encrypted log after the crash failed: \(error)")
            return (recorder.frames, duringWork)
        }
        let cursor = await log.cursorPosition("consumer") ?? 0
        let durable = await log.durableSequence
        var reader = LogReader(walDirectory: LogLayout(dataDirectory: dataDirectory).walDirectory, fileSystem: recovered, from: 1, keys: Self.keys)
        let events = try readToEnd(&reader)
        var seenIds = Set<Int64>()
        var previous: UInt64 = 0
        for event in events {
            #expect(event.sequence > previous, "seed \(seed): sequence \(event.sequence) after \(previous)")
            previous = event.sequence
            guard let id = TestEvents.id(of: event.event) else {
                Issue.record("seed \(seed): an event that no test wrote: \(event)")
                continue
            }
            #expect(seenIds.insert(id).inserted, "seed \(seed): event \(id) present twice")
            #expect(attempted.contains(id), "seed \(seed): event \(id) was never appended")
            if let expected = acknowledged[event.sequence] {
                #expect(expected == id, "seed \(seed): sequence \(event.sequence) holds \(id), acknowledged as \(expected)")
            }
            #expect(event.event == TestEvents.tracking(id), "seed \(seed): event \(id) changed")
        }
        let present = Dictionary(uniqueKeysWithValues: events.map { ($0.sequence, $0) })
        for (sequence, id) in acknowledged where sequence >= cursor {
            #expect(present[sequence].flatMap { TestEvents.id(of: $0.event) } == id, "seed \(seed): acknowledged event \(id) at \(sequence) lost")
        }
        #expect(durable > (acknowledged.keys.max() ?? 0), "seed \(seed): next sequence \(durable) reuses an acknowledged one")

        // The recovered log appends: the first frame goes where the lost, unsynced ones were.
        let after = try await log.append((0..<Int64.random(in: 1...5, using: &random)).map { TestEvents.tracking(1_000_000 + $0) })
        #expect(after.lowerBound == durable)
        await log.close()

        // A clean reopen is one more writer session: it appends after the last frame.
        recorder.session.store(2, ordering: .relaxed)
        let reopened = try await WriteAheadLog.open(
            dataDirectory: dataDirectory, configuration: configuration, fileSystem: recovered, logger: quietLogger)
        #expect(await reopened.durableSequence == after.upperBound)
        let last = try await reopened.append([TestEvents.tracking(2_000_000)])
        #expect(last.lowerBound == after.upperBound)
        await reopened.close()
        var final = LogReader(
            walDirectory: LogLayout(dataDirectory: dataDirectory).walDirectory, fileSystem: recovered, from: durable, keys: Self.keys)
        #expect(
            try readToEnd(&final).compactMap { TestEvents.id(of: $0.event) }
                == (0..<Int64(after.count)).map { 1_000_000 + $0 } + [2_000_000], "seed \(seed)")
        return (recorder.frames, duringWork)
    }
}

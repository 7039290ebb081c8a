import Foundation
import RelayCore
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog

/// Seeded simulated power losses at every kind of moment: during appends (torn frames, lost
/// unsynced writes), segment rolls (lost creates and renames), cursor writes and segment
/// deletions. After each one the log is reopened and checked against what was acknowledged.
///
/// The seeds are 8 shards of 1,250 (10,000 crash points): the fast tier runs the first 150 of each
/// shard (1,200), the thorough tier the other 1,100 of each (``CrashSimulationRemainingSeedsTests``),
/// so CI runs every one of the 10,000 once. `Benchmarks/crash-soak.sh` runs more, on other seeds,
/// through the variables below.
@Suite("Simulated power loss", .tier(.fast))
struct CrashSimulationTests {
    static let shards = 8
    /// Seeds per shard in all (`CAMPAIGN_RELAY_CRASH_SEEDS_PER_SHARD`, 1,250).
    static let seedsPerShard = ProcessInfo.processInfo.environment["CAMPAIGN_RELAY_CRASH_SEEDS_PER_SHARD"].flatMap { Int($0) } ?? 1250
    /// How many of each shard's seeds the fast tier runs (`CAMPAIGN_RELAY_CRASH_FAST_SEEDS_PER_SHARD`, 150).
    static let fastSeedsPerShard = min(
        seedsPerShard, ProcessInfo.processInfo.environment["CAMPAIGN_RELAY_CRASH_FAST_SEEDS_PER_SHARD"].flatMap { Int($0) } ?? 150)
    /// The first seed; shard `s` runs seeds `firstSeed + s × seedsPerShard + i`.
    static let firstSeed = ProcessInfo.processInfo.environment["CAMPAIGN_RELAY_CRASH_FIRST_SEED"].flatMap { UInt64($0) } ?? 0

    /// The shards compute on two threads of their own, not on the cooperative pool that every
    /// other suite waits on (``DedicatedThreadExecutor``).
    static let executors = [DedicatedThreadExecutor(name: "power-loss-a"), DedicatedThreadExecutor(name: "power-loss-b")]

    @Test("every acknowledged event survives, exactly once and in order (the fast tier's seeds)")
    func crashPoints() async throws {
        try await Self.run(indices: 0..<Self.fastSeedsPerShard)
    }

    /// Runs seeds `indices` of every shard, the shards two at a time on the two threads, then checks
    /// the coverage of them all: floors that scale with the number of seeds run.
    static func run(indices: Range<Int>) async throws {
        let coverage = try await withThrowingTaskGroup(of: Coverage.self) { group in
            for shard in 0..<shards {
                group.addTask {
                    var coverage = Coverage()
                    for index in indices {
                        let seed = firstSeed + UInt64(shard * seedsPerShard + index)
                        coverage.add(try await executors[shard % 2].run { try await CrashSimulationTests().runOneCrash(seed: seed) })
                    }
                    print("shard \(shard), seeds \(indices.lowerBound)..<\(indices.upperBound) of each: \(coverage)")
                    return coverage
                }
            }
            return try await group.reduce(into: Coverage()) { $0.merge($1) }
        }
        coverage.checkFloors()
    }

    /// Where a seed's crash landed.
    struct Crash {
        var duringWork: Bool
        var afterAcknowledgement: Bool
        var point: (operation: SimulatedFileSystem.Operation, path: String)?
        var powerLoss = SimulatedFileSystem.PowerLossReport()
    }

    /// How many seeds ran, crashed during the work or after an acknowledgement, and during each
    /// risky transition.
    struct Coverage: CustomStringConvertible {
        var seeds = 0
        var duringWork = 0
        var afterAcknowledgement = 0
        var segmentRoll = 0
        var cursorCommit = 0
        var segmentDeletion = 0
        var powerLoss = SimulatedFileSystem.PowerLossReport()

        mutating func add(_ crash: Crash) {
            seeds += 1
            if crash.duringWork { duringWork += 1 }
            if crash.afterAcknowledgement { afterAcknowledgement += 1 }
            powerLoss.add(crash.powerLoss)
            guard let (operation, path) = crash.point else { return }
            if path.contains("/cursors/") {
                cursorCommit += 1
            } else if path.hasSuffix(".tmp") || (path.hasSuffix(".wal") && (operation == .rename || operation == .create)) {
                segmentRoll += 1
            } else if operation == .remove, path.hasSuffix(".wal") {
                segmentDeletion += 1
            }
        }

        mutating func merge(_ other: Coverage) {
            seeds += other.seeds
            duringWork += other.duringWork
            afterAcknowledgement += other.afterAcknowledgement
            segmentRoll += other.segmentRoll
            cursorCommit += other.cursorCommit
            segmentDeletion += other.segmentDeletion
            powerLoss.add(other.powerLoss)
        }

        /// The least of each kind these seeds must produce: about a third of what they give on
        /// average (per 1,250 seeds: 98 % crash during the work, 89 % after an acknowledgement,
        /// ~670 in a segment roll, ~400 in a cursor commit, ~50 in a segment deletion, ~150 sectors
        /// torn or trashed, 100 to 150 kept after a lost one), as a share of the seeds run, so a
        /// smaller run has smaller floors. Below about 100 seeds the rarest floors round to zero.
        func checkFloors() {
            func floor(_ share: Double) -> Int { Int((Double(seeds) * share).rounded(.down)) }
            #expect(seeds > 0, "no seed ran")
            #expect(duringWork >= seeds * 85 / 100, "\(self)")
            #expect(afterAcknowledgement >= seeds / 2, "\(self)")
            #expect(segmentRoll >= floor(0.18), "\(self)")
            #expect(cursorCommit >= floor(0.10), "\(self)")
            #expect(segmentDeletion >= floor(0.013), "\(self)")
            // The power-loss model must produce each kind of damage, holes before kept bytes included.
            #expect(powerLoss.sectorsKeptAfterALostOne >= floor(0.027), "\(self)")
            #expect(powerLoss.sectorsTrashed >= floor(0.04), "\(self)")
            #expect(powerLoss.sectorsTorn >= floor(0.04), "\(self)")
        }

        var description: String {
            let transitions =
                "\(seeds) seeds, \(duringWork) crashed during the work, after an acknowledgement \(afterAcknowledgement), "
                + "segment roll \(segmentRoll), cursor commit \(cursorCommit), segment deletion \(segmentDeletion)"
            let writes =
                "unsynced sectors kept \(powerLoss.sectorsKept), dropped \(powerLoss.sectorsDropped), "
                + "torn \(powerLoss.sectorsTorn), trashed \(powerLoss.sectorsTrashed), "
                + "kept after a lost one \(powerLoss.sectorsKeptAfterALostOne)"
            return "\(transitions); \(writes)"
        }
    }

    /// Runs a workload until the simulated crash, recovers, and checks. Returns where the crash
    /// landed.
    func runOneCrash(seed: UInt64) async throws -> Crash {
        var random = SeededGenerator(seed: seed)
        let fileSystem = SimulatedFileSystem()
        let dataDirectory = "/data"
        // Three seeds in four preallocate segments (the default) in small steps, so both growing
        // the allocation and overwriting it are crashed into; the fourth grows segments frame by frame.
        // One seed in eight appends larger batches uncompressed, so a commit spans several sectors, and loses
        // power during an fdatasync, when a whole commit is unsynced: that is where the power-loss
        // model can keep a sector after a lost one.
        let losesPowerInASync = seed % 8 == 1
        let configuration = LogConfiguration(
            segmentBytes: 1024 + Int64.random(in: 0...3072, using: &random), compressionLevel: losesPowerInASync ? 0 : 1,
            preallocateSegments: seed % 4 != 3, preallocationStep: Int64.random(in: 256...2048, using: &random), retention: .none
        )
        // About 150 to 250 mutating operations happen in the workload below; crash somewhere inside.
        if seed % 16 == 5 {
            // One seed in sixteen crashes inside a segment deletion, which random points rarely hit.
            fileSystem.crash(onOperation: .remove, occurrence: Int.random(in: 1...2, using: &random))
        } else if losesPowerInASync {
            fileSystem.crash(onOperation: .synchronizeData, occurrence: Int.random(in: 1...30, using: &random))
        } else {
            fileSystem.crash(afterOperations: Int.random(in: 1...140, using: &random))
        }

        var acknowledged: [UInt64: Int64] = [:]
        var attempted = Set<Int64>()
        var committedCursor: UInt64 = 0
        var attemptedCursor: UInt64 = 0
        var nextId: Int64 = 1
        // Declaring the consumer at open writes its cursor at the oldest event kept: 1, in a new log.
        attemptedCursor = 1
        if let log = try? await WriteAheadLog.open(
            dataDirectory: dataDirectory, configuration: configuration, consumers: [.cursorFile("consumer")], fileSystem: fileSystem,
            logger: quietLogger)
        {
            committedCursor = 1
            work: for step in 0..<40 {
                // Two or three concurrent appenders share group commits.
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
                    case .failure:
                        failed = true
                    }
                }
                if failed { break work }
                // A consumer moves its cursor now and then, which also deletes consumed segments.
                if step % 3 == 2, let maxAcked = acknowledged.keys.max() {
                    let target = UInt64.random(in: committedCursor...(maxAcked + 1), using: &random)
                    attemptedCursor = max(attemptedCursor, target)
                    do {
                        try await log.commitCursor("consumer", to: target)
                        committedCursor = target
                    } catch {
                        break work
                    }
                }
            }
            await log.close()
        }
        var crash = Crash(duringWork: fileSystem.hasCrashed, afterAcknowledgement: !acknowledged.isEmpty, point: fileSystem.crashPoint)
        fileSystem.crashNow()

        // Power loss: each unsynced write kept, lost, torn or sector-trashed; directory changes partly lost.
        let (recovered, powerLoss) = fileSystem.crashedCopyWithReport(using: &random)
        crash.powerLoss = powerLoss
        let log: WriteAheadLog
        do {
            log = try await WriteAheadLog.open(dataDirectory: dataDirectory, configuration: configuration, fileSystem: recovered, logger: quietLogger)
        } catch {
            Issue.record("seed \(seed): reopening after the crash failed: \(error)")
            return crash
        }
        let cursor = await log.cursorPosition("consumer") ?? 0
        #expect(
            cursor >= committedCursor && cursor <= max(attemptedCursor, committedCursor),
            "seed \(seed): cursor \(cursor) outside \(committedCursor)...\(attemptedCursor)")
        let durable = await log.durableSequence
        let (events, _) = try readAll(dataDirectory, fileSystem: recovered)

        // Exactly once, in order: sequence numbers strictly increase and no event appears twice.
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
            // Nothing invented: every event present was appended by the workload.
            #expect(attempted.contains(id), "seed \(seed): event \(id) was never appended")
            if let expected = acknowledged[event.sequence] {
                #expect(expected == id, "seed \(seed): sequence \(event.sequence) holds \(id), acknowledged as \(expected)")
            }
            #expect(event.event == TestEvents.tracking(id), "seed \(seed): event \(id) changed")
        }
        // Every acknowledged event at or after the durable cursor is there (earlier ones may be deleted).
        let present = Dictionary(uniqueKeysWithValues: events.map { ($0.sequence, $0) })
        for (sequence, id) in acknowledged where sequence >= cursor {
            #expect(present[sequence].flatMap { TestEvents.id(of: $0.event) } == id, "seed \(seed): acknowledged event \(id) at \(sequence) lost")
        }
        #expect(durable > (acknowledged.keys.max() ?? 0), "seed \(seed): next sequence \(durable) reuses an acknowledged one")

        // The log keeps working after recovery.
        let range = try await log.append([TestEvents.tracking(1_000_000)])
        #expect(range.lowerBound == durable)
        let after = try readAll(dataDirectory, fileSystem: recovered, from: range.lowerBound)
        #expect(after.events.map(\.sequence) == [range.lowerBound])
        await log.close()

        // Recovery left nothing stale behind the new frame: a second open finds a clean tail and the same events.
        let reopened = try await WriteAheadLog.open(
            dataDirectory: dataDirectory, configuration: configuration, fileSystem: recovered, logger: quietLogger)
        #expect(reopened.recoveryReport.truncatedBytes == 0, "seed \(seed): the second open cut \(reopened.recoveryReport.truncatedBytes) bytes")
        #expect(await reopened.durableSequence == range.upperBound)
        await reopened.close()
        let final = try readAll(dataDirectory, fileSystem: recovered)
        // Closing applies the retention (none here): segments the cursor passed may go, nothing else.
        let expected = events.map(\.sequence) + [range.lowerBound]
        let kept = final.events.map(\.sequence)
        #expect(kept == expected.filter { $0 >= (kept.first ?? .max) }, "seed \(seed): events changed after a clean reopen")
        #expect(Set(expected.filter { $0 >= cursor }).isSubset(of: kept), "seed \(seed): an event the cursor needs went with a clean reopen")
        return crash
    }
}

/// The thorough tier's share of the 10,000 seeds of ``CrashSimulationTests``: the seeds of each
/// shard the fast tier does not run.
@Suite("Simulated power loss, the rest of the seeds", .tier(.thorough))
struct CrashSimulationRemainingSeedsTests {
    @Test("every acknowledged event survives, exactly once and in order (the thorough tier's seeds)")
    func crashPoints() async throws {
        try await CrashSimulationTests.run(indices: CrashSimulationTests.fastSeedsPerShard..<CrashSimulationTests.seedsPerShard)
    }
}

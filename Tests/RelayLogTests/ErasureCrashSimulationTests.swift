import Foundation
import RelayCore
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog

/// Simulated power losses during the log's part of an erasure (``ErasurePlan`` written,
/// ``LogErasure`` rewriting segments, the plan removed), in plain and encrypted logs: afterwards a
/// reader sees the person's registrations all intact (the crash came before the plan was durable)
/// or all erased (masked by the plan, or rewritten), never some of each; everyone else's events
/// are at their sequence numbers, unchanged; finishing the erasure from its plan after the restart
/// leaves them all erased; no frame is damaged; and no (salt, first sequence) seals two different
/// frames, across the crash and the rewrites.
@Suite("Erasure under simulated power loss", .tier(.fast))
struct ErasureCrashSimulationTests {
    /// 300 seeds (a few seconds on two cores); `CAMPAIGN_RELAY_ERASURE_CRASH_SEEDS` runs more.
    static let seeds = ProcessInfo.processInfo.environment["CAMPAIGN_RELAY_ERASURE_CRASH_SEEDS"].flatMap { Int($0) } ?? 300
    static let firstSeed: UInt64 = 9_000_000
    static let keys = encryptionTestRing(("k1", 1), ("k2", 2))
    static let selector = ErasureSelector(.userKey("ada"))

    /// A registration of `person`, numbered `number`.
    static func registration(_ person: String, _ number: Int64) -> Event {
        var registration = Registration(
            platform: number % 2 == 0 ? .ios : .android, integrationKey: "app", registrationToken: "\(person)-token-\(number)",
            time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000 + number * 1_000_000, fractionDigits: 3))
        registration.userKey = person
        registration.deviceName = "\(person)'s device \(number)"
        return .registration(registration)
    }

    /// What the whole run saw.
    struct Tally: CustomStringConvertible {
        var seeds = 0
        var crashesDuringErasure = 0
        var foundOld = 0
        var foundPlanned = 0
        var foundDone = 0

        var description: String {
            "\(seeds) seeds, \(crashesDuringErasure) crashed during the erasure; after the crash: \(foundOld) old state, \(foundPlanned) planned (masked), \(foundDone) done"
        }
    }

    @Test("a power loss at any point of an erasure: all of her registrations or none, the others untouched; the restart finishes it")
    func powerLossDuringErasure() async throws {
        var tally = Tally()
        var frames = EncryptedCrashSimulationTests.Tally()
        for index in 0..<Self.seeds {
            let seed = Self.firstSeed + UInt64(index)
            let (written, crashed, found) = try await runOneCrash(seed: seed)
            tally.seeds += 1
            if crashed { tally.crashesDuringErasure += 1 }
            switch found {
            case .old: tally.foundOld += 1
            case .planned: tally.foundPlanned += 1
            case .done: tally.foundDone += 1
            }
            frames.add(written, seed: seed, crashedDuringWork: crashed)
        }
        print("erasure power loss: \(tally); frames: \(frames)")
        #expect(frames.reusedNonces.isEmpty, "\(frames.reusedNonces.prefix(10))")
        // Not vacuous: crashes landed in the erasure, and left each of the three states.
        #expect(tally.crashesDuringErasure >= Self.seeds * 80 / 100, "\(tally)")
        #expect(tally.foundOld > 0 && tally.foundPlanned > 0 && tally.foundDone > 0, "\(tally)")
    }

    enum Found { case old, planned, done }

    func runOneCrash(seed: UInt64) async throws -> (frames: [WrittenFrame], crashed: Bool, found: Found) {
        var random = SeededGenerator(seed: seed)
        let simulated = SimulatedFileSystem()
        let recorder = FrameWriteRecorder()
        let fileSystem = RecordingFileSystem(base: simulated, recorder: recorder)
        let dataDirectory = "/data"
        let walDirectory = LogLayout(dataDirectory: dataDirectory).walDirectory
        let encrypted = seed % 2 == 0
        var configuration = LogConfiguration(
            segmentBytes: 768 + Int64.random(in: 0...1024, using: &random), compressionLevel: seed % 3 == 0 ? 0 : 1,
            preallocateSegments: seed % 4 != 3,
            retention: .none)
        // An encrypted log was written under k1 and is erased under a ring whose newest key is k2:
        // the frames rewritten are sealed anew under k2, the others stay under k1.
        configuration.encryption = encrypted ? encryptionTestRing(("k1", 1)) : nil

        // The log before the request: hits, Ada's and Bob's registrations, over several segments.
        var expected: [UInt64: Event] = [:]
        let setup = try await WriteAheadLog.open(
            dataDirectory: dataDirectory, configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
        var number: Int64 = 0
        for _ in 0..<Int.random(in: 6...12, using: &random) {
            var batch: [Event] = []
            for _ in 0..<Int.random(in: 2...9, using: &random) {
                number += 1
                switch Int.random(in: 0..<6, using: &random) {
                case 0: batch.append(Self.registration("ada", number))
                case 1: batch.append(Self.registration("bob", number))
                default: batch.append(TestEvents.tracking(number))
                }
            }
            let range = try await setup.append(batch)
            for (offset, sequence) in range.enumerated() { expected[sequence] = batch[offset] }
        }
        // At least one of hers, to erase.
        let hers = try await setup.append([Self.registration("ada", number + 1)])
        expected[hers.lowerBound] = Self.registration("ada", number + 1)
        await setup.close()
        let adas = Set(expected.filter { if case .registration(let r) = $0.value { r.userKey == "ada" } else { false } }.keys)

        // The erasure, with a crash somewhere in it: anywhere among the calls it makes, counted
        // on a copy of the disk first.
        if encrypted { configuration.encryption = Self.keys }
        let probe = simulated.crashedCopy(using: &random)
        let probeStart = probe.operationCount
        try await Self.erase(adas, configuration: configuration, fileSystem: probe, seed: seed)
        let operations = probe.operationCount - probeStart
        recorder.session.store(1, ordering: .relaxed)
        simulated.crash(afterOperations: Int.random(in: 1...operations, using: &random))
        do {
            try await Self.erase(adas, configuration: configuration, fileSystem: fileSystem, seed: seed)
        } catch {
            // The crash (every call fails from then on).
            #expect(simulated.hasCrashed, "seed \(seed): failed without a crash: \(error)")
        }
        let crashed = simulated.hasCrashed
        simulated.crashNow()

        // What the disk kept, read as a new process would: the plan, if durable, masks her.
        let recovered = RecordingFileSystem(base: simulated.crashedCopy(using: &random), recorder: recorder)
        recorder.session.store(2, ordering: .relaxed)
        let planned = try ErasurePlan.pending(walDirectory: walDirectory, fileSystem: recovered)
        let before = try check(recovered, walDirectory: walDirectory, keys: configuration.encryption, expected: expected, adas: adas, seed: seed)
        let found: Found
        if !planned.isEmpty {
            found = .planned
            #expect(planned.count == 1 && Set(planned[0].targets.map(\.sequence)) == adas, "seed \(seed)")
            #expect(before == .erased, "seed \(seed): a durable plan masks all of her registrations")
        } else {
            found = before == .erased ? .done : .old
        }

        // The restart finishes it from the plan.
        recorder.session.store(3, ordering: .relaxed)
        let reopened = try await WriteAheadLog.open(
            dataDirectory: dataDirectory, configuration: configuration, fileSystem: recovered, logger: quietLogger)
        for plan in try ErasurePlan.pending(walDirectory: walDirectory, fileSystem: recovered) {
            _ = try LogErasure.erase(
                Set(plan.targets.map(\.sequence)), in: walDirectory, walDirectory: walDirectory, keys: configuration.encryption, fileSystem: recovered
            )
            try plan.remove(walDirectory: walDirectory, fileSystem: recovered)
        }
        await reopened.close()
        #expect(try ErasurePlan.pending(walDirectory: walDirectory, fileSystem: recovered).isEmpty)
        let after = try check(recovered, walDirectory: walDirectory, keys: configuration.encryption, expected: expected, adas: adas, seed: seed)
        #expect(after == (found == .old ? .intact : .erased), "seed \(seed): found \(found), then \(after)")
        return (recorder.frames, crashed, found)
    }

    /// The log's part of an erasure of her registrations `adas`, as ``PersonalDataErasure`` runs it.
    static func erase(_ adas: Set<UInt64>, configuration: LogConfiguration, fileSystem: any FileSystem, seed: UInt64) async throws {
        let walDirectory = LogLayout(dataDirectory: "/data").walDirectory
        let log = try await WriteAheadLog.open(dataDirectory: "/data", configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
        let boundary = await log.sealActiveSegment()
        let matches = try LogErasure.find(selector, in: walDirectory, below: boundary, keys: configuration.encryption, fileSystem: fileSystem)
        #expect(Set(matches.map(\.sequence)) == adas, "seed \(seed): found what there is")
        let plan = ErasurePlan(
            id: "e\(seed)", requestedAt: "2026-11-27T00:00:00Z", selectorKind: selector.kind, selectorHash: "hash:000000000000",
            integrationKey: nil, boundary: boundary,
            targets: matches.map {
                ErasurePlan.Target(
                    sequence: $0.sequence, tenant: "", integrationKey: "app", platform: "ios", tokenDigest: "", timeNanoseconds: 0,
                    originRelayId: nil, viaRelayId: nil, forwarded: false, handedOn: false)
            }, archiveDirectories: [])
        try plan.store(walDirectory: walDirectory, fileSystem: fileSystem)
        log.erasureMask.insert(adas)
        _ = try LogErasure.erase(adas, in: walDirectory, walDirectory: walDirectory, keys: configuration.encryption, fileSystem: fileSystem)
        try plan.remove(walDirectory: walDirectory, fileSystem: fileSystem)
        await log.close()
    }

    enum Hers: Equatable { case intact, erased, mixed }

    /// Reads the whole log: everyone else's events at their sequence numbers unchanged, no damage;
    /// whether her registrations are all intact, all erased, or mixed (a failure).
    func check(
        _ fileSystem: any FileSystem, walDirectory: String, keys: LogKeyRing?, expected: [UInt64: Event], adas: Set<UInt64>, seed: UInt64
    ) throws -> Hers {
        var reader = LogReader(walDirectory: walDirectory, fileSystem: fileSystem, from: 1, keys: keys)
        var events: [SequencedEvent] = []
        while true {
            let batch = try reader.read(maximumEvents: 1000)
            #expect(batch.damage.isEmpty, "seed \(seed): damage \(batch.damage)")
            if batch.events.isEmpty { break }
            events += batch.events
        }
        reader.close()
        #expect(events.map(\.sequence) == expected.keys.sorted(), "seed \(seed): every sequence number, in order")
        var erased = 0
        for event in events {
            if adas.contains(event.sequence) {
                if case .erased(let entry) = event.event {
                    erased += 1
                    #expect(entry.time == expected[event.sequence]?.time, "seed \(seed)")
                } else {
                    #expect(event.event == expected[event.sequence], "seed \(seed): her registration at \(event.sequence) changed")
                }
            } else {
                #expect(event.event == expected[event.sequence], "seed \(seed): \(event.sequence) is not hers and changed")
            }
        }
        let hers: Hers = erased == 0 ? .intact : erased == adas.count ? .erased : .mixed
        #expect(hers != .mixed, "seed \(seed): \(erased) of her \(adas.count) registrations erased")
        return hers
    }
}

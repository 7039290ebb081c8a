import Foundation
import RelayCore
import RelayForwarding
import RelayLog
import RelayPrivacy
import RelayServer
import RelayTestSupport
import TestTiers
import Testing

/// Simulated power losses during an erasure as production runs it (``PersonalDataErasure``, its
/// log, plan and audit-log files on a simulated disk; the forwarding store in real SQLite beside
/// it, outside the crash model), in plain and encrypted logs: afterwards a reader sees the
/// person's registrations all intact (the crash came before the plan was durable) or all erased
/// (masked by the plan, or rewritten), never some of each; everyone else's events are at their
/// sequence numbers, unchanged; ``PersonalDataErasure/finishPending()`` on the reopened log
/// leaves them all erased, her deduplication rows gone and one record in the audit log; no frame
/// is damaged; and no (salt, first sequence) seals two different frames, across the crash and the
/// rewrites.
@Suite("Erasure under simulated power loss", .tier(.fast))
struct ErasureCrashSimulationTests {
    /// 300 seeds (seconds on two cores); `CAMPAIGN_RELAY_ERASURE_CRASH_SEEDS` runs more.
    static let seeds = ProcessInfo.processInfo.environment["CAMPAIGN_RELAY_ERASURE_CRASH_SEEDS"].flatMap { Int($0) } ?? 300
    static let firstSeed: UInt64 = 9_000_000
    static let written = LogKeyRing(keys: [.init(id: "k1", bytes: TestKeys.bytes("erasure-crash-k1"))])
    static let keys = LogKeyRing(keys: written.keys + [.init(id: "k2", bytes: TestKeys.bytes("erasure-crash-k2"))])
    static let selector = ErasureSelector(.userKey("ada"))
    static let hourWindow = Duration.seconds(3600)

    /// A registration of `person`, numbered `number`.
    static func registration(_ person: String, _ number: Int64) -> Registration {
        var registration = Registration(
            platform: number % 2 == 0 ? .ios : .android, integrationKey: "app", registrationToken: "\(person)-token-\(number)",
            time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000 + number * 1_000_000, fractionDigits: 3))
        registration.userKey = person
        registration.deviceName = "\(person)'s device \(number)"
        return registration
    }

    /// A tracking hit numbered `number`.
    static func hit(_ number: Int64) -> Event {
        .tracking(
            TrackingEvent(
                action: .impression, messageId: MessageID(decimal: number), deliveryId: "f0190",
                time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000 + number * 1_000_000, fractionDigits: 3)))
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
        // The real part: forwarding.sqlite and pseudonym.key, in a directory whose path the
        // simulated disks use for the log; in memory where there is a tmpfs (its fsyncs are free).
        let dataDirectory =
            FileManager.default.fileExists(atPath: "/dev/shm")
            ? "/dev/shm/campaign-relay-erasure-power-loss-\(UUID().uuidString)" : temporaryDirectory("erasure-power-loss")
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        defer { removeTree(dataDirectory) }
        let store = try await ForwardingStore(dataDirectory: dataDirectory)
        var tally = Tally()
        var frames = SealedFrameTally()
        for index in 0..<Self.seeds {
            let seed = Self.firstSeed + UInt64(index)
            let (written, crashed, found) = try await runOneCrash(seed: seed, dataDirectory: dataDirectory, store: store)
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

    func runOneCrash(seed: UInt64, dataDirectory: String, store: ForwardingStore) async throws -> (
        frames: [WrittenFrame], crashed: Bool, found: Found
    ) {
        var random = SeededGenerator(seed: seed)
        let simulated = SimulatedFileSystem()
        let recorder = FrameWriteRecorder()
        let fileSystem = RecordingFileSystem(base: simulated, recorder: recorder)
        let walDirectory = LogLayout(dataDirectory: dataDirectory).walDirectory
        let encrypted = seed % 2 == 0
        var configuration = LogConfiguration(
            segmentBytes: 768 + Int64.random(in: 0...1024, using: &random), compressionLevel: seed % 3 == 0 ? 0 : 1,
            preallocateSegments: seed % 4 != 3,
            retention: .none)
        // An encrypted log was written under k1 and is erased under a ring whose newest key is k2:
        // the frames rewritten are sealed anew under k2, the others stay under k1.
        configuration.encryption = encrypted ? Self.written : nil

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
                case 0: batch.append(.registration(Self.registration("ada", number)))
                case 1: batch.append(.registration(Self.registration("bob", number)))
                default: batch.append(Self.hit(number))
                }
            }
            let range = try await setup.append(batch)
            for (offset, sequence) in range.enumerated() { expected[sequence] = batch[offset] }
        }
        // At least one of hers, to erase.
        let hers = try await setup.append([.registration(Self.registration("ada", number + 1))])
        expected[hers.lowerBound] = .registration(Self.registration("ada", number + 1))
        await setup.close()
        let registrations = expected.compactMapValues { (event: Event) -> Registration? in
            if case .registration(let registration) = event { registration } else { nil }
        }
        let adas = Set(registrations.filter { $0.value.userKey == "ada" }.keys)

        // The erasure, with a crash somewhere in it: anywhere among the calls it makes, counted
        // on a copy of the disk first.
        if encrypted { configuration.encryption = Self.keys }
        let probe = simulated.crashedCopy(using: &random)
        let probeStart = probe.operationCount
        try await remember(registrations.values, in: store)
        let report = try await Self.erase(configuration: configuration, fileSystem: probe, dataDirectory: dataDirectory, store: store)
        #expect(report.registrations == adas.count, "seed \(seed): found what there is")
        let operations = probe.operationCount - probeStart
        // The uploader's deduplication state as it was before the request (the probe's erasure
        // deleted her rows from the one real store).
        try await remember(registrations.values, in: store)
        recorder.session.store(1, ordering: .relaxed)
        simulated.crash(afterOperations: Int.random(in: 1...operations, using: &random))
        do {
            _ = try await Self.erase(configuration: configuration, fileSystem: fileSystem, dataDirectory: dataDirectory, store: store)
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

        // The restart finishes it from the plan, as serve and erase do.
        recorder.session.store(3, ordering: .relaxed)
        let reopened = try await WriteAheadLog.open(
            dataDirectory: dataDirectory, configuration: configuration, fileSystem: recovered, logger: quietLogger)
        let finished: [ErasureReport]
        do {
            finished = try await PersonalDataErasure(
                log: reopened, dataDirectory: dataDirectory, archiveDirectories: [], store: store, aggregator: nil, fileSystem: recovered,
                logger: quietLogger
            ).finishPending()
        } catch {
            await reopened.close()
            throw error
        }
        await reopened.close()
        #expect(finished.count == (found == .planned ? 1 : 0), "seed \(seed)")
        #expect(try ErasurePlan.pending(walDirectory: walDirectory, fileSystem: recovered).isEmpty)
        let after = try check(recovered, walDirectory: walDirectory, keys: configuration.encryption, expected: expected, adas: adas, seed: seed)
        #expect(after == (found == .old ? .intact : .erased), "seed \(seed): found \(found), then \(after)")
        let records = try ErasureAuditLog.records(dataDirectory: dataDirectory, fileSystem: recovered)
        #expect(records.map(\.registrations) == (found == .old ? [] : [adas.count]), "seed \(seed): found \(found), recorded \(records)")
        for (sequence, registration) in registrations {
            let unchanged = try await store.isUnchanged(registration, within: Self.hourWindow)
            #expect(unchanged == (found == .old || !adas.contains(sequence)), "seed \(seed): deduplication row of \(sequence)")
        }
        return (recorder.frames, crashed, found)
    }

    /// Remembers every one of `registrations` as delivered, as the uploader does.
    func remember(_ registrations: some Sequence<Registration>, in store: ForwardingStore) async throws {
        for registration in registrations { try await store.recordDelivered(registration) }
    }

    /// The erasure of her registrations, as `erase` runs it: the log opened, ``PersonalDataErasure``
    /// with no aggregator (and no aggregates database), the log closed.
    static func erase(
        configuration: LogConfiguration, fileSystem: any FileSystem, dataDirectory: String, store: ForwardingStore
    ) async throws -> ErasureReport {
        let log = try await WriteAheadLog.open(
            dataDirectory: dataDirectory, configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
        let erasure = PersonalDataErasure(
            log: log, dataDirectory: dataDirectory, archiveDirectories: [], store: store, aggregator: nil, fileSystem: fileSystem,
            logger: quietLogger)
        do {
            let report = try await erasure.erase(selector, dryRun: false)
            await log.close()
            return report
        } catch {
            await log.close()
            throw error
        }
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

import CampaignEmulator
import CampaignProtocol
import Foundation
import Logging
import RelayCore
import RelayForwarding
import RelayLog
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

func hit(_ id: Int, delivery: String = "f0190", action: TrackingAction = .impression) -> Event {
    .tracking(
        TrackingEvent(
            action: action, messageId: MessageID(decimal: Int64(id)), deliveryId: delivery,
            time: recentEventTime))
}

func registration(
    token: String, userKey: String = "ada", key: String = "app", params: [AdditionalParameter]? = nil,
    time: EventTime = EventTime(nanosecondsSinceEpoch: 0)
) -> Event {
    .registration(
        Registration(platform: .android, integrationKey: key, registrationToken: token, userKey: userKey, additionalParams: params, time: time))
}

/// Appends `events` to a new log, runs an uploader against `running` until drained, and returns its statistics.
func upload(
    _ events: [Event], to running: RunningEmulator, configuration: UploadConfiguration = UploadConfiguration(), directory: String? = nil
) async throws -> [UploadLane.Kind: LaneStatistics] {
    let dataDirectory = directory ?? temporaryDirectory("upload")
    let log = try await WriteAheadLog.open(
        dataDirectory: dataDirectory, consumers: [UploadLane.Kind.tracking.consumer, UploadLane.Kind.marketing.consumer], logger: quietLogger)
    if !events.isEmpty { _ = try await log.append(events) }
    let store = try await ForwardingStore(dataDirectory: dataDirectory)
    let host = try CampaignHost(parsing: running.url, role: "test")
    let uploader = try Uploader(
        log: log, sinks: [SinkList(tenant: nil, sinks: [TrackingHostSink(host: host), MarketingHostSink(host: host)])], store: store,
        configuration: configuration, logger: quietLogger)
    try await uploader.run(until: await log.durableSequence)
    let statistics = await uploader.statistics()
    await log.close()
    return statistics
}

@Suite("Uploader against the emulator over loopback", .serialized, .tier(.fast))
struct UploaderTests {
    @Test("a replay runs the uploader's lanes over a range: hits through the pipeline, registrations resent, no cursor moved")
    func replayUsesThePipeline() async throws {
        let running = try await RunningEmulator.start()
        let directory = temporaryDirectory("replay-lanes")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        _ = try await log.append((1...600).map { hit($0) } + [registration(token: "t1"), registration(token: "t1")])
        await log.close()
        let store = try await ForwardingStore(dataDirectory: directory)
        let host = try CampaignHost(parsing: running.url, role: "test")
        let uploader = try Uploader(
            source: .range(.files(walDirectory: LogLayout(dataDirectory: directory).walDirectory), sequences: 101..<603, times: nil),
            sinks: [SinkList(tenant: nil, sinks: [TrackingHostSink(host: host), MarketingHostSink(host: host)])], store: store,
            configuration: UploadConfiguration(), deduplicates: false, logger: quietLogger
        )
        try await uploader.run(until: nil)
        let statistics = await uploader.statistics()
        #expect(statistics[.tracking]?.delivered == 500)
        #expect(statistics[.marketing]?.delivered == 2, "a replay resends a registration even when unchanged")
        #expect(await running.emulator.recorder.acceptedHits == 500)
        let lanes = uploader.lanes
        let tracking = try #require(lanes.first { $0.kind == .campaignTracking })
        #expect(await tracking.pipelinedDeliveries == 500, "every hit of a healthy host goes through the pipeline")
        #expect(!PosixFileSystem().exists("\(directory)/wal/cursors/upload-tracking.cursor"))
        await running.stop()
    }

    @Test("an outage with Retry-After: everything arrives once, and nothing is sent before the host said", arguments: [false, true])
    func outage(dateForm: Bool) async throws {
        var faults = EmulatorFaults()
        // The outage starts with the uploader's first request, however long a busy machine takes
        // to send it, and lasts 2 s.
        faults.unavailableSecondsFromFirstRequest = 2
        faults.retryAfterSeconds = 1
        faults.retryAfterAsDate = dateForm
        let running = try await RunningEmulator.start(faults: faults)
        let statistics = try await upload(
            (1...300).map { hit($0) }, to: running, configuration: UploadConfiguration(backoff: Backoff(base: .milliseconds(50), cap: .seconds(1))))
        let started = try #require(running.emulator.outageStart, "the emulator saw no request")
        let recorder = running.emulator.recorder
        #expect(await recorder.acceptedHits == 300)
        #expect(await recorder.distinctHits == 300, "no duplicates without a crash")
        #expect(statistics[.tracking]?.delivered == 300)
        #expect(statistics[.tracking]?.backlog == 0)
        // Retry-After: 1, or the HTTP-date of one second later: once a 503 is answered, no new
        // request comes before that time. Only the first wave (8 requests in flight before any
        // answer) may arrive earlier, however busy the machine. The date names a whole second (the
        // emulator writes now + 1 s rounded down), so it may ask for less than a second.
        let requests = await recorder.lastRequests(10_000).sorted { $0.time < $1.time }
        let refused = requests.enumerated().filter { $0.element.status == 503 }
        #expect(!refused.isEmpty)
        #expect(refused.count <= 8 + 4, "the breaker must keep an outage cheap, got \(refused.count) refused requests")
        for (index, answer) in refused {
            let allowedAt = dateForm ? (answer.time + 1).rounded(.down) : answer.time + 1
            let early = requests.enumerated().filter { later in
                later.offset > max(index, 7) && later.element.time < allowedAt - 0.05
            }
            #expect(early.isEmpty, "\(early.count) requests came before the time a 503 asked for (\(dateForm ? "HTTP-date" : "seconds"))")
        }
        #expect(requests.first(where: { $0.status == 200 }).map { $0.time - started >= 1.9 } == true)
        await running.stop()
    }

    @Test("a permanent rejection goes to the dead-letter store and everything behind it flows")
    func deadLetters() async throws {
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["app"]
        let running = try await RunningEmulator.start(faults: faults)
        let directory = temporaryDirectory("deadletter")
        let events = [registration(token: "t1"), registration(token: "t2", key: "unknown"), registration(token: "t3")] + (1...50).map { hit($0) }
        let statistics = try await upload(events, to: running, directory: directory)
        #expect(statistics[.marketing]?.delivered == 2)
        #expect(statistics[.marketing]?.deadLettered == 1)
        #expect(statistics[.tracking]?.delivered == 50)
        // Order is kept per token only: t1 and t3 may arrive in either order.
        #expect(Set(await running.emulator.recorder.acceptedRegistrations.compactMap { $0["registrationToken"] }) == ["t1", "t3"])
        #expect(await running.emulator.recorder.acceptedRegistrations.count == 2)
        let store = try await ForwardingStore(dataDirectory: directory)
        let letters = try await store.deadLetters()
        #expect(letters.count == 1)
        #expect(letters.first?.status == 400)
        #expect(letters.first?.sequence == 2)
        #expect(letters.first?.responseBody.contains("Unknown integration key 'unknown'") == true)
        #expect(letters.first?.eventJSON.contains("\"registrationToken\":\"t2\"") == true)
        await running.stop()
    }

    @Test("an unchanged registration is skipped; a token refresh, a new user key or new params are sent")
    func registrationDeduplication() async throws {
        let running = try await RunningEmulator.start()
        let directory = temporaryDirectory("dedup")
        let first = try await upload([registration(token: "t1"), registration(token: "t1")], to: running, directory: directory)
        #expect(first[.marketing]?.delivered == 1)
        #expect(first[.marketing]?.skippedDuplicates == 1)
        // Later, in another run: the same again (skipped: remembered durably), a refreshed token,
        // a new user key and new parameters for the refreshed token (all sent).
        let second = try await upload(
            [
                registration(token: "t1"), registration(token: "t1-refreshed"), registration(token: "t1-refreshed", userKey: "grace"),
                registration(token: "t1-refreshed", userKey: "grace", params: [AdditionalParameter(name: "tier", value: .string("gold"))]),
                registration(token: "t1-refreshed", userKey: "grace", params: [AdditionalParameter(name: "tier", value: .string("gold"))]),
            ],
            to: running, directory: directory
        )
        #expect(second[.marketing]?.delivered == 3)
        #expect(second[.marketing]?.skippedDuplicates == 2)
        let sent = await running.emulator.recorder.acceptedRegistrations
        #expect(sent.map { $0["registrationToken"] ?? "" } == ["t1", "t1-refreshed", "t1-refreshed", "t1-refreshed"])
        #expect(sent.map { $0["userKey"] ?? "" } == ["ada", "ada", "grace", "grace"])
        await running.stop()
    }

    @Test("408, 425 and 429 are retried end to end: every event arrives, none is dead-lettered", arguments: [408, 425, 429])
    func retriedStatuses(status: Int) async throws {
        var faults = EmulatorFaults()
        faults.failureRate = 0.4
        faults.failureStatus = status
        let running = try await RunningEmulator.start(faults: faults)
        let directory = temporaryDirectory("retried-\(status)")
        let statistics = try await upload(
            (1...100).map { hit($0) } + (1...10).map { registration(token: "t\($0)", time: .now()) }, to: running,
            configuration: UploadConfiguration(backoff: Backoff(base: .milliseconds(5), cap: .milliseconds(50)), breakerThreshold: 50),
            directory: directory
        )
        #expect(await running.emulator.recorder.distinctHits == 100)
        #expect(await running.emulator.recorder.acceptedRegistrations.count == 10)
        #expect((statistics[.tracking]?.retries ?? 0) + (statistics[.marketing]?.retries ?? 0) > 10, "the host failed often enough to test retries")
        #expect(try await ForwardingStore(dataDirectory: directory).deadLetters().isEmpty)
        let refused = await running.emulator.recorder.lastRequests(10_000).filter { $0.status == status }
        #expect(!refused.isEmpty)
        await running.stop()
    }

    @Test("a damaged uploader cursor leads to sending again, never to loss")
    func damagedCursor() async throws {
        let running = try await RunningEmulator.start()
        let directory = temporaryDirectory("damaged-cursor")
        _ = try await upload((1...100).map { hit($0) }, to: running, directory: directory)
        #expect(await running.emulator.recorder.acceptedHits == 100)
        // Flip a byte of the saved position: the cursor's checksum no longer matches.
        let path = "\(directory)/wal/cursors/\(UploadLane.Kind.tracking.cursorName).cursor"
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[12] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        _ = try await upload([], to: running, directory: directory)
        // Recovery resets a damaged cursor to the start of the log: everything goes again, nothing is lost.
        #expect(await running.emulator.recorder.distinctHits == 100)
        #expect(await running.emulator.recorder.acceptedHits == 200)
        await running.stop()
    }

    @Test("random 500s and dropped connections: every event still arrives")
    func flakyHost() async throws {
        var faults = EmulatorFaults()
        faults.failureRate = 0.3
        faults.dropRate = 0.1
        let running = try await RunningEmulator.start(faults: faults)
        let statistics = try await upload(
            (1...400).map { hit($0, action: $0.isMultiple(of: 2) ? .open : .impression) }, to: running,
            configuration: UploadConfiguration(backoff: Backoff(base: .milliseconds(5), cap: .milliseconds(100)), breakerThreshold: 50)
        )
        let recorder = running.emulator.recorder
        #expect(await recorder.distinctHits == 400)
        #expect(statistics[.tracking]?.delivered == 400)
        #expect((statistics[.tracking]?.retries ?? 0) > 50)
        // A dropped connection may have been processed; without a crash every hit is still sent until
        // the host answers 200, and a 200 is never resent.
        #expect(await recorder.acceptedHits == 400)
        #expect(await recorder.countsByDelivery["f0190"] == ["1": 200, "2": 200])
        await running.stop()
    }
    @Test("an upload lane that starts while a group commit is under way sends from its cursor, not from the log's durable end")
    func startDuringAGroupCommit() async throws {
        let running = try await RunningEmulator.start()
        let directory = temporaryDirectory("start-during-commit")
        defer { removeTree(directory) }
        // The log on a file system whose fdatasync can be held; the forwarding store on disk.
        let fileSystem = SimulatedFileSystem()
        // Declared at open, as `serve` declares its lanes.
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, consumers: [UploadLane.Kind.tracking.consumer], fileSystem: fileSystem, logger: quietLogger)
        _ = try await log.append((1...100).map { hit($0) })
        // `serve` under load: a group commit is under way (the writer is on the I/O thread) when the lane starts.
        fileSystem.holdSynchronize()
        let append = Task { try await log.append((101...110).map { hit($0) }) }
        try await pollUntil("the append's fdatasync to start") { fileSystem.synchronizeCallsWaiting == 1 }
        let store = try await ForwardingStore(dataDirectory: directory)
        let host = try CampaignHost(parsing: running.url, role: "test")
        let uploader = try Uploader(
            log: log, sinks: [SinkList(tenant: nil, sinks: [TrackingHostSink(host: host)])], store: store, configuration: UploadConfiguration(),
            logger: quietLogger)
        let tracking = try #require(await uploader.lanes.first)
        let run = Task { try await uploader.run(until: 111) }
        try await pollUntil("the lane's first read of the log") { await tracking.stats.end == 101 }
        fileSystem.releaseSynchronize()
        #expect(try await append.value == 101..<111)
        try await run.value
        let (distinct, accepted) = (await running.emulator.recorder.distinctHits, await running.emulator.recorder.acceptedHits)
        #expect(distinct == 110, "hits 1...100 were durable before the lane started and must be sent")
        #expect(accepted == 110)
        let delivered = await tracking.stats.delivered
        #expect(delivered == 110)
        #expect(await log.cursorPosition(UploadLane.Kind.tracking.cursorName) == 111)
        await log.close()
        await running.stop()
    }
}

/// Waits until `condition` holds, checking every millisecond, for at most 30 s; records what was
/// awaited when the time runs out.
func pollUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(1))
    }
    Issue.record("gave up after 30 s waiting for \(what)")
}

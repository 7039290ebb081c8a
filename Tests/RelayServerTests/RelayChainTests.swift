import CampaignProtocol
import Foundation
import Logging
import RelayChain
import RelayCore
import RelayForwarding
import RelayLog
import RelayProcessTestSupport
import RelayServer
import RelayTestSupport
import Synchronization
import TestTiers
import Testing

/// Edge → central and edge → regional → central, with real logs and real HTTP.
@Suite("Relay chains", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct RelayChainTests {
    static let token = "relay-token-0123456789"

    static func hits(_ range: ClosedRange<Int>) -> [Event] {
        range.map { id in
            .tracking(
                TrackingEvent(
                    action: .open, messageId: MessageID(decimal: Int64(id)), deliveryId: "chain",
                    time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000 + Int64(id))))
        }
    }

    /// Runs a relay lane from the log in `directory` to `central` until everything logged is taken,
    /// recording through `metrics`.
    static func handOn(
        _ directory: String, to central: RunningServer, batchEvents: Int = 1000, metrics: LaneMetrics = .none
    ) async throws -> LaneStatistics {
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [CentralRelaySink.consumer], logger: quietLogger)
        let transport = try HTTPClientTransport(connectionsPerHost: 1)
        let lane = UploadLane(
            sink: CentralRelaySink(host: try CampaignHost(parsing: central.url, role: "test"), token: token, batchEvents: batchEvents), log: log,
            transport: transport, configuration: UploadConfiguration(), logger: quietLogger, metrics: metrics)
        var failure: LogError?
        do {
            try await lane.run(until: await log.durableSequence)
        } catch {
            failure = error
        }
        let statistics = await lane.stats
        // Shut down also after a failure: a client dropped unshut traps in debug builds.
        await transport.shutdown()
        await log.close()
        if let failure { throw failure }
        return statistics
    }

    static func logged(_ directory: String) throws -> [SequencedEvent] {
        var reader = LogReader(walDirectory: LogLayout(dataDirectory: directory).walDirectory, from: 1)
        defer { reader.close() }
        return try reader.read(maximumEvents: 1_000_000).events
    }

    @Test("an edge hands its log on exactly once, also when its position is lost and it sends everything again")
    func edgeToCentral() async throws {
        let central = try await RunningServer.start { $0.relayToken = Self.token }
        let edge = temporaryDirectory("edge")
        defer { removeTree(edge) }
        let log = try await WriteAheadLog.open(dataDirectory: edge, logger: quietLogger)
        _ = try await log.append(Self.hits(1...2500))
        let edgeID = log.identity.relayID
        await log.close()

        let first = try await Self.handOn(edge, to: central)
        #expect(first.delivered == 2500)
        #expect(first.backlog == 0)
        // The edge's position is lost (a damaged cursor file reads as 0): it sends everything again.
        try FileManager.default.removeItem(atPath: "\(edge)/wal/cursors/\(CentralRelaySink.cursorName).cursor")
        let again = try await Self.handOn(edge, to: central, batchEvents: 700)
        #expect(again.delivered == 2500, "every batch went again")
        let more = try await WriteAheadLog.open(dataDirectory: edge, logger: quietLogger)
        _ = try await more.append(Self.hits(2501...2600))
        await more.close()
        #expect(try await Self.handOn(edge, to: central).delivered == 100)
        await central.stop()

        let stored = try Self.logged(central.dataDirectory)
        #expect(stored.count == 2600, "each event once")
        #expect(stored.map { $0.event.chain?.first.sequence } == (1...2600).map { Optional(UInt64($0)) })
        #expect(stored.allSatisfy { $0.event.chain?.first.relayID == edgeID && $0.event.chain?.hop == nil })
    }

    @Test(
        "a central relay restarted on its data directory answers batches its log holds already as already stored: its ledger is rebuilt from the log, nothing appended twice"
    )
    func resendAfterTheCentralRestarts() async throws {
        let first = try await RunningServer.start { $0.relayToken = Self.token }
        let edge = temporaryDirectory("edge-central-restart")
        defer { removeTree(edge) }
        let log = try await WriteAheadLog.open(dataDirectory: edge, logger: quietLogger)
        _ = try await log.append(Self.hits(1...2500))
        let edgeID = log.identity.relayID
        await log.close()
        #expect(try await Self.handOn(edge, to: first).delivered == 2500)
        await first.stop()

        // The central relay starts again on the same data directory, and the edge, whose position
        // was lost (its answers lost to a crash, say), sends everything again: the restarted relay
        // knows what it holds only from its log.
        let restarted = try await RunningServer.start { configuration in
            configuration.dataDirectory = first.dataDirectory
            configuration.relayToken = Self.token
        }
        try FileManager.default.removeItem(atPath: "\(edge)/wal/cursors/\(CentralRelaySink.cursorName).cursor")
        let again = try await Self.handOn(edge, to: restarted, batchEvents: 700)
        #expect(again.delivered == 2500, "every batch went again, and was answered 200")
        let http = TestHTTPClient()
        let metrics = try await http.get(restarted.url + "/metrics").body
        await http.shutdown()
        // Every batch was wholly stored before the restart: each answered so, none appended.
        let answers = metrics.split(separator: "\n").filter { $0.hasPrefix("relay_received_") }
        #expect(
            answers.count == 1 && answers[0].hasPrefix(#"relay_received_batches_total{relay="\#(edgeID)",answer="already_stored"} "#),
            "\(answers)")
        await restarted.stop()

        let stored = try Self.logged(first.dataDirectory)
        #expect(stored.count == 2500, "each event once, not \(stored.count)")
        let origins = stored.map { $0.event.chain?.first.sequence }
        #expect(
            origins == (1...2500).map { Optional(UInt64($0)) },
            "the edge's sequences 1 to 2500 in order, from \(origins.prefix(3)) to \(origins.suffix(3))")
        removeTree(first.dataDirectory)
    }

    /// The real transport to the central relay, but for its first request: then the erasure of
    /// `erased` begins while the request is on the wire, and the request fails unsent.
    final class ErasingOnFirstAttempt: CampaignTransport {
        let real: HTTPClientTransport
        let mask: ErasureMask
        let erased: UInt64
        let erasure = Mutex<Task<[String: Set<UInt64>], Never>?>(nil)

        init(real: HTTPClientTransport, mask: ErasureMask, erased: UInt64) {
            self.real = real
            self.mask = mask
            self.erased = erased
        }

        func send(_ request: CampaignRequest, timeout: Duration) async -> DeliveryOutcome {
            let first = erasure.withLock { erasure in
                guard erasure == nil else { return false }
                let (mask, erased) = (mask, erased)
                erasure = Task { await mask.insertAwaitingSends([erased]) }
                return true
            }
            guard first else { return await real.send(request, timeout: timeout) }
            while !mask.contains(erased) { try? await Task.sleep(for: .milliseconds(1)) }
            return .retryable(reason: "injected: the first attempt fails", retryAfter: nil)
        }
    }

    @Test("a registration erased while its batch waits for a retry is left out of the retry, which still covers its sequence number")
    func erasedBetweenAttempts() async throws {
        let central = try await RunningServer.start { $0.relayToken = Self.token }
        let edge = temporaryDirectory("edge-erasure")
        defer { removeTree(edge) }
        let log = try await WriteAheadLog.open(dataDirectory: edge, consumers: [CentralRelaySink.consumer], logger: quietLogger)
        let registration = Event.registration(
            Registration(
                platform: .android, integrationKey: "app", registrationToken: "erased-token", userKey: "erased-user", additionalParams: nil,
                time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000)))
        _ = try await log.append(Self.hits(1...10) + [registration] + Self.hits(11...20))
        let transport = try HTTPClientTransport(connectionsPerHost: 1)
        let erasing = ErasingOnFirstAttempt(real: transport, mask: log.erasureMask, erased: 11)
        let lane = UploadLane(
            sink: CentralRelaySink(host: try CampaignHost(parsing: central.url, role: "test"), token: Self.token, batchEvents: 1000), log: log,
            transport: erasing, configuration: UploadConfiguration(backoff: Backoff(base: .milliseconds(1), cap: .milliseconds(5))),
            logger: quietLogger)
        try await lane.run(until: await log.durableSequence)
        let statistics = await lane.stats
        await transport.shutdown()
        let cursor = await log.cursorPosition(CentralRelaySink.cursorName)
        await log.close()
        await central.stop()

        // The erasure waited for the failed attempt, which delivered nothing.
        let erasure = try #require(erasing.erasure.withLock { $0 })
        #expect(await erasure.value.isEmpty)
        #expect(statistics.delivered == 20 && statistics.skippedErased == 1, "\(statistics)")
        #expect(cursor == 22, "the batch covered the erased registration's sequence number")
        let stored = try Self.logged(central.dataDirectory)
        #expect(stored.map { $0.event.chain?.first.sequence } == (Array(1...10) + Array(12...21)).map { Optional(UInt64($0)) })
        #expect(!stored.contains { if case .registration = $0.event { true } else { false } })
    }

    @Test("edge → regional → central: the first origin is kept and every event is stored once at the end")
    func chainOfThree() async throws {
        let central = try await RunningServer.start { $0.relayToken = Self.token }
        let regional = try await RunningServer.start { $0.relayToken = Self.token }
        let edge = temporaryDirectory("edge3")
        defer { removeTree(edge) }
        let log = try await WriteAheadLog.open(dataDirectory: edge, logger: quietLogger)
        _ = try await log.append(Self.hits(1...300))
        let edgeID = log.identity.relayID
        await log.close()
        #expect(try await Self.handOn(edge, to: regional).delivered == 300)
        await regional.stop()
        // The regional relay's own log goes on to the central one, twice (a lost answer).
        let regionalID = try #require(RelayIdentity.read(dataDirectory: regional.dataDirectory)).relayID
        #expect(try await Self.handOn(regional.dataDirectory, to: central).delivered == 300)
        try FileManager.default.removeItem(atPath: "\(regional.dataDirectory)/wal/cursors/\(CentralRelaySink.cursorName).cursor")
        #expect(try await Self.handOn(regional.dataDirectory, to: central).delivered == 300)
        await central.stop()

        let stored = try Self.logged(central.dataDirectory)
        #expect(stored.count == 300)
        #expect(stored.allSatisfy { $0.event.chain?.first.relayID == edgeID }, "the first origin is the edge")
        #expect(stored.allSatisfy { $0.event.chain?.hop?.relayID == regionalID }, "the hop is the regional relay")
        #expect(stored.map { $0.event.chain?.first.sequence } == (1...300).map { Optional(UInt64($0)) })

        // `stats` counts them once, for the edge, through the regional relay.
        let stats = try await RelayBinary.run(try RelayBinary.path(), ["stats", "--json", "--data-dir", central.dataDirectory])
        #expect(stats.status == 0, "\(stats.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
        let origins = try #require(report["origins"] as? [[String: Any]])
        #expect(origins.count == 1, "\(origins)")
        #expect(origins.first?["relayId"] as? String == edgeID)
        #expect(origins.first?["via"] as? String == regionalID)
        #expect(origins.first?["events"] as? Int == 300)
        #expect(origins.first?["hits"] as? Int == 300)
        #expect(origins.first?["lastSequence"] as? Int == 300)
        let text = try await RelayBinary.run(try RelayBinary.path(), ["stats", "--data-dir", central.dataDirectory])
        #expect(text.stdout.contains("handed on by other relays"), "\(text.stdout)")
        #expect(text.stdout.contains(edgeID) && text.stdout.contains(regionalID), "\(text.stdout)")
    }

    @Test(
        "serve --upstream-relay: events go on as they arrive; while the central relay is down they wait, /readyz and /metrics say so, and then arrive once"
    )
    func serveHandsOn() async throws {
        let central = try await RunningServer.start { $0.relayToken = Self.token }
        let centralURL = central.url
        let edge = try await RunningServer.start {
            $0.upstreamRelay = try? CampaignHost(parsing: centralURL, role: "test")
            $0.upstreamToken = Self.token
        }
        let http = TestHTTPClient()
        for id in 1...20 { #expect(try await http.get(edge.url + "/r/?id=h\(String(id, radix: 16)),d1,2").status == 200) }
        try await waitUntil("20 events at the central relay", seconds: 30) { (try? Self.logged(central.dataDirectory).count) == 20 }
        // The edge has its answer for the last batch too (or it would send that batch again).
        try await waitUntil("the edge to have nothing waiting", seconds: 30) {
            try await http.get(edge.url + "/readyz").body.contains(#""backlog":0"#)
        }
        await central.stop()

        // The central relay is down: the edge keeps taking events and says what waits.
        for id in 21...25 { #expect(try await http.get(edge.url + "/r/?id=h\(String(id, radix: 16)),d1,2").status == 200) }
        var readiness: [String: Any] = [:]
        try await waitUntil("the edge to see the central relay unreachable", seconds: 30) {
            let ready = try await http.get(edge.url + "/readyz")
            readiness = (try JSONSerialization.jsonObject(with: Data(ready.body.utf8)) as? [String: Any]) ?? [:]
            return ready.status == 200 && (readiness["upstream"] as? [String: Any])?["reachable"] as? Bool == false
        }
        let upstream = try #require(readiness["upstream"] as? [String: Any])
        #expect(upstream["backlog"] as? Int == 5)
        #expect(upstream["unreachableSince"] is String)
        #expect(upstream["oldestWaitingEvent"] is String)
        #expect((upstream["lastFailure"] as? String)?.contains("cannot reach") == true, "\(upstream)")
        #expect(try await http.get(edge.url + "/healthz").status == 200)
        let metrics = try await http.get(edge.url + "/metrics").body
        #expect(
            metrics.contains(#"relay_upload_backlog{lane="relay",tenant="*"} 5.0"#),
            "\(metrics.split(separator: "\n").filter { $0.contains("relay_upload_backlog") })")
        let unreachable = metrics.split(separator: "\n").first { $0.hasPrefix("relay_upstream_unreachable_seconds ") }
        #expect((unreachable?.split(separator: " ").last).flatMap { Double($0) }.map { $0 > 0 } == true, "\(unreachable ?? "none")")

        // Back on the same address: the waiting events arrive, each once.
        let port = central.port
        let restarted = try await RunningServer.start {
            $0.relayToken = Self.token
            $0.dataDirectory = central.dataDirectory
            $0.port = port
        }
        try await waitUntil("25 events at the central relay", seconds: 60) { (try? Self.logged(central.dataDirectory).count) == 25 }
        try await waitUntil("the edge to see the central relay again", seconds: 30) {
            let body = try await http.get(edge.url + "/readyz").body
            return body.contains(#""backlog":0"#) && body.contains(#""reachable":true"#)
        }
        await edge.stop()
        await restarted.stop()
        await http.shutdown()
        let stored = try Self.logged(central.dataDirectory)
        #expect(stored.map { $0.event.chain?.first.sequence } == (1...25).map { Optional(UInt64($0)) })
    }
}

import CampaignEmulator
import CampaignProtocol
import RelayCore
import RelayForwarding
import RelayLog
import RelayProcessTestSupport
import RelayServer
import RelayTestSupport
import TestTiers
import Testing

/// The forwarding lanes record their metrics themselves, as things happen: nothing samples them.
@Suite("Lane metrics, recorded where they happen", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct LaneMetricsTests {
    static func value(_ series: String, in metrics: RelayMetrics) -> Double? {
        let scrape = String(decoding: metrics.render(), as: UTF8.self)
        return scrape.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.dropFirst(series.count + 1)) }
    }

    @Test(
        "the lanes of an adopted stream have series of their own with a stream label: its backlog, breaker and deliveries are not this relay's, and the relay_upstream gauges stay this relay's"
    )
    func adoptedStreamSeries() {
        let metrics = RelayMetrics(version: "test")
        let own = metrics.laneMetrics(for: .campaignTracking)
        let adopted = metrics.laneMetrics(for: .campaignTracking, adoptedStream: "relay-b")
        own.backlog.record(7)
        adopted.backlog.record(1200)
        adopted.breakerOpen?.record(1)
        adopted.delivered.increment(by: 5)
        #expect(Self.value(#"relay_upload_backlog{lane="tracking",tenant="default"}"#, in: metrics) == 7)
        #expect(Self.value(#"relay_upload_backlog{lane="tracking",tenant="default",stream="relay-b"}"#, in: metrics) == 1200)
        #expect(Self.value(#"relay_upload_breaker_open{lane="tracking",tenant="default"}"#, in: metrics) == 0)
        #expect(Self.value(#"relay_upload_breaker_open{lane="tracking",tenant="default",stream="relay-b"}"#, in: metrics) == 1)
        #expect(Self.value(#"relay_upload_delivered_total{tenant="default"}"#, in: metrics) == 0)
        #expect(Self.value(#"relay_upload_delivered_total{tenant="default",stream="relay-b"}"#, in: metrics) == 5)
        // The same handles again for the same lane of the same stream.
        metrics.laneMetrics(for: .campaignTracking, adoptedStream: "relay-b").backlog.record(3)
        #expect(Self.value(#"relay_upload_backlog{lane="tracking",tenant="default",stream="relay-b"}"#, in: metrics) == 3)
        // An adopted hand-off lane keeps its age in its own series only.
        let relayLane = metrics.laneMetrics(for: .centralRelay, adoptedStream: "relay-b")
        #expect(relayLane.unreachable == nil)
        #expect(metrics.laneMetrics(for: .centralRelay).unreachable != nil)
    }

    @Test(
        "upload lanes move relay_upload_delivered_total by exactly the events delivered and relay_upload_retries_total by their retries, with no sampler"
    )
    func uploadLanesRecord() async throws {
        // One answer in five is a 503: retries, and every event delivered in the end.
        var faults = EmulatorFaults()
        faults.failureRate = 0.2
        faults.failureStatus = 503
        let running = try await RunningEmulator.start(faults: faults)
        let directory = temporaryDirectory("lane-metrics")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, consumers: [UploadLane.Kind.tracking.consumer, UploadLane.Kind.marketing.consumer], logger: quietLogger)
        let hits: [Event] = (1...300).map { id in
            .tracking(
                TrackingEvent(
                    action: .open, messageId: MessageID(decimal: Int64(id)), deliveryId: "d",
                    time: recentEventTime))
        }
        let registrations: [Event] = (1...20).map { id in
            .registration(
                Registration(
                    platform: .android, integrationKey: "app", registrationToken: "t\(id)", userKey: "u", additionalParams: nil,
                    time: recentEventTime))
        }
        _ = try await log.append(hits + registrations)
        let store = try await ForwardingStore(dataDirectory: directory)
        let metrics = RelayMetrics(version: "test")
        #expect(Self.value(#"relay_upload_delivered_total{tenant="default"}"#, in: metrics) == 0)
        let host = try CampaignHost(parsing: running.url, role: "test")
        let uploader = try Uploader(
            log: log, sinks: [SinkList(tenant: nil, sinks: [TrackingHostSink(host: host), MarketingHostSink(host: host)])], store: store,
            configuration: UploadConfiguration(backoff: Backoff(base: .milliseconds(2), cap: .milliseconds(20)), maximumAttempts: 1000),
            logger: quietLogger, metrics: { metrics.laneMetrics(for: $0) })
        try await uploader.run(until: await log.durableSequence)
        let statistics = await uploader.statistics()
        await log.close()
        await running.stop()

        #expect(statistics.values.map { $0.delivered }.reduce(0, +) == 320)
        #expect(Self.value(#"relay_upload_delivered_total{tenant="default"}"#, in: metrics) == 320)
        let retries = statistics.values.map { $0.retries }.reduce(0, +)
        #expect(retries > 0, "one answer in five was a 503")
        #expect(Self.value(#"relay_upload_retries_total{tenant="default"}"#, in: metrics) == Double(retries))
        for lane in ["tracking", "marketing"] {
            #expect(Self.value(#"relay_upload_backlog{lane="\#(lane)",tenant="default"}"#, in: metrics) == 0)
            #expect(Self.value(#"relay_upload_oldest_unsent_seconds{destination="\#(lane)",tenant="default"}"#, in: metrics) == 0)
            #expect(Self.value(#"relay_upload_breaker_open{lane="\#(lane)",tenant="default"}"#, in: metrics) == 0, "it answered last")
        }
    }

    @Test("the relay lane records its backlog and ages with no sampler, and does not count its hand-offs as Campaign's deliveries")
    func relayLaneRecords() async throws {
        let central = try await RunningServer.start { $0.relayToken = RelayChainTests.token }
        let directory = temporaryDirectory("lane-metrics-relay")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [CentralRelaySink.consumer], logger: quietLogger)
        let hits: [Event] = (1...700).map { id in
            .tracking(
                TrackingEvent(
                    action: .open, messageId: MessageID(decimal: Int64(id)), deliveryId: "d",
                    time: recentEventTime))
        }
        _ = try await log.append(hits)
        await log.close()
        let metrics = RelayMetrics(version: "test")
        let statistics = try await RelayChainTests.handOn(
            directory, to: central, batchEvents: 100, metrics: metrics.laneMetrics(for: SinkKind.centralRelay))
        await central.stop()

        #expect(statistics.delivered == 700)
        #expect(Self.value(#"relay_upload_delivered_total{tenant="default"}"#, in: metrics) == 0, "events Campaign accepted: none here")
        #expect(Self.value(#"relay_upload_backlog{lane="relay",tenant="*"}"#, in: metrics) == 0)
        #expect(Self.value(#"relay_upload_oldest_unsent_seconds{destination="relay",tenant="*"}"#, in: metrics) == 0)
        #expect(Self.value("relay_upstream_oldest_waiting_seconds", in: metrics) == 0)
        #expect(Self.value("relay_upstream_unreachable_seconds", in: metrics) == 0)
    }

    @Test("a lane records a time once; each scrape shows its age as of that scrape")
    func agesAsOfTheScrape() async throws {
        let metrics = RelayMetrics(version: "test")
        let relay = metrics.laneMetrics(for: SinkKind.centralRelay)
        let since = EventTime.now().nanosecondsSinceEpoch - 60 * 1_000_000_000
        relay.oldestUnsent.record(since)
        try #require(relay.unreachable != nil, "the relay lane has the unreachable gauge")
        relay.unreachable?.record(since)
        let first = try #require(Self.value(#"relay_upload_oldest_unsent_seconds{destination="relay",tenant="*"}"#, in: metrics))
        #expect(first >= 60 && first < 120, "\(first)")
        try await Task.sleep(for: .milliseconds(1100))
        let scrape = String(decoding: metrics.render(), as: UTF8.self)
        let value = { (series: String) in
            scrape.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.dropFirst(series.count + 1)) }
        }
        let later = try #require(value(#"relay_upload_oldest_unsent_seconds{destination="relay",tenant="*"}"#))
        #expect(later >= first + 1, "the age grew with no lane recording: \(first) then \(later)")
        #expect(value("relay_upstream_oldest_waiting_seconds") == later, "the same value as the relay destination's oldest unsent")
        #expect(value("relay_upstream_unreachable_seconds") == later)
        #expect(value(#"relay_upload_oldest_unsent_seconds{destination="tracking",tenant="default"}"#) == 0, "a destination owed nothing shows 0")
        #expect(metrics.laneMetrics(for: SinkKind.campaignTracking).unreachable == nil)
        relay.oldestUnsent.record(0)
        #expect(Self.value("relay_upstream_oldest_waiting_seconds", in: metrics) == 0)
    }
}

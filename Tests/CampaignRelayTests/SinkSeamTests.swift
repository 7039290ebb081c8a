import CampaignProtocol
import Foundation
import RelayCore
import RelayForwarding
import RelayLog
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

@testable import CampaignRelay

/// A kind of sink that exists only in this file, as a new kind of upstream would be written: the
/// default tenant's registrations, to an endpoint on loopback (the Campaign emulator), delivered.
struct LoopbackRegistrationSink: EventSink {
    /// Its kind: labelled `loopback`, one lane per tenant, the registrations' last stop.
    static let kind = SinkKind(
        label: "loopback", scope: .perTenant, role: .delivers, carriesRegistrations: true, tally: .counted("loopback registration"))

    let host: CampaignHost
    var name: String { kind.laneName(of: tenant) }
    var kind: SinkKind { Self.kind }
    var endpoint: String { host.description }
    var hosts: [CampaignHost] { [host] }

    func carries(_ event: Event) -> Bool {
        if case .registration(let registration) = event { return registration.tenant == nil }
        return false
    }

    func request(for event: Event, to host: CampaignHost) -> CampaignRequest? { .carrying(event, to: host) }
}

/// The sink seam, shown end to end: a sink defined in one file and put in the list configuration
/// builds with one line shows up everywhere destinations are listed, over real HTTP on loopback.
@Suite("A sink of one file shows up everywhere", .serialized, .timeLimit(.minutes(2)), .tier(.fast))
struct SinkSeamTests {
    @Test("a test's own sink, registered in one line: in /metrics, /v1/status, the erasure's report and upload's summary")
    func aNewSinkShowsUpEverywhere() async throws {
        let running = try await RunningEmulator.start()
        let sink = LoopbackRegistrationSink(host: try CampaignHost(parsing: running.url, role: "test"))
        let server = try await RunningServer.start { configuration in
            configuration.additionalSinks = [sink]  // the one registration line
        }
        let http = TestHTTPClient()
        #expect(try await http.post(server.url + "/nms/mobile/1/registerAndroid.jssp", androidVectorBody, headers: formHeaders).status == 200)
        try await waitUntil("the registration to reach the loopback endpoint", seconds: 10) {
            await running.emulator.recorder.acceptedRegistrations.count == 1
        }

        // /v1/status: the sink is a destination of its own, with its endpoint and what it delivered.
        try await waitUntil("the status page to show the loopback destination's delivery", seconds: 10) {
            try await Self.loopbackDestination(http, server)?["delivered"] as? Int == 1
        }
        let destination = try #require(try await Self.loopbackDestination(http, server))
        #expect(destination["tenant"] as? String == "default")
        #expect(destination["url"] as? String == sink.endpoint)
        #expect(destination["breaker"] as? String == "closed")

        // /metrics: its lane's series, labelled with its kind, and its delivery counted as Campaign's
        // are (its kind delivers; no other lane runs).
        let metrics = try await http.get(server.url + "/metrics").body
        #expect(metrics.contains(#"relay_upload_delivered_total{tenant="default"} 1"# + "\n"), "\(metrics)")
        #expect(metrics.contains(#"relay_upload_backlog{lane="loopback",tenant="default"} 0"#), "\(metrics)")
        #expect(metrics.contains(#"relay_upload_breaker_open{lane="loopback",tenant="default"} 0"#))
        #expect(metrics.contains(#"relay_upload_oldest_unsent_seconds{destination="loopback",tenant="default"}"#))

        // The erasure's report: the registration the sink delivered counts as sent on, once its
        // lane's cursor is past it (a dry run changes nothing meanwhile).
        try await waitUntil("a dry run to count the registration as sent on", seconds: 10) {
            try await Self.sentOnToCampaign(Self.erase(http, server, dryRun: true)) == 1
        }
        let report = try await Self.erase(http, server, dryRun: false)
        #expect(report["registrations"] as? Int == 1)
        #expect(Self.sentOnToCampaign(report) == 1, "the loopback sink's lane had passed the registration: \(report)")
        await http.shutdown()
        await server.stop()

        // `upload`'s summary, over the same list with the same one line: a registration appended
        // since goes to the sink, and the summary counts it in the sink's own words.
        var lists = UpstreamOptions.sinkLists(tracking: nil, marketing: nil, tenants: [])
        lists[0].sinks.append(sink)  // the one registration line of `upload`
        let log = try await WriteAheadLog.open(dataDirectory: server.dataDirectory, consumers: lists.consumers, logger: quietLogger)
        _ = try await log.append([
            .registration(
                Registration(platform: .android, integrationKey: "key", registrationToken: "upload-token", userKey: "u", time: EventTime.now()))
        ])
        let store = try await ForwardingStore(dataDirectory: server.dataDirectory)
        let uploader = try Uploader(log: log, sinks: lists, store: store, configuration: UploadConfiguration(), logger: quietLogger)
        try await uploader.run(until: await log.durableSequence)
        let summary = UploadSummary(
            lanes: await uploader.statisticsByLane(), sinks: uploader.lanes.map(UploadSummary.Lane.init), seconds: 1, pendingDeadLetters: 0)
        await log.close()
        await running.stop()
        #expect(summary.text.hasPrefix("delivered 1 event (1 loopback registration);"), "\(summary.text)")
        #expect(summary.json.contains(#""loopback":{"#), "\(summary.json)")
    }

    /// The `loopback` destination of `/v1/status`, if listed.
    static func loopbackDestination(_ http: TestHTTPClient, _ server: RunningServer) async throws -> [String: Any]? {
        let body = try await http.get(server.url + "/v1/status").body
        let status = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        let destinations = status?["destinations"] as? [[String: Any]] ?? []
        return destinations.first { $0["name"] as? String == "loopback" }
    }

    /// The report of erasing the registrations of `testUser` (the SDK vector's user).
    static func erase(_ http: TestHTTPClient, _ server: RunningServer, dryRun: Bool) async throws -> [String: Any] {
        let answer = try await http.post(server.url + "/v1/privacy/erasures", #"{"userKey":"testUser","dryRun":\#(dryRun)}"#)
        try #require(answer.status == 200, "\(answer.body)")
        return try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any] ?? [:]
    }

    /// `forwarded.toCampaign` of an erasure's report: the registrations a delivering sink had taken.
    static func sentOnToCampaign(_ report: [String: Any]) -> Int? {
        (report["forwarded"] as? [String: Any])?["toCampaign"] as? Int
    }
}

import CampaignEmulator
import CampaignProtocol
import RelayCore
import RelayForwarding
import RelayLog
import RelayTestSupport
import TestTiers
import Testing

/// The sink seam: a destination says how events become requests and what answers mean; the one
/// driver (`UploadLane`) does the rest for any sink.
@Suite("Sinks", .serialized, .tier(.fast))
struct SinkTests {
    /// A destination written in the test, as a new kind of upstream would be: only the clicks, to a
    /// tracking host.
    struct ClicksOnlySink: EventSink {
        let host: CampaignHost
        var name: String { "clicks" }
        var kind: SinkKind { SinkKind(label: "clicks", scope: .perTenant, role: .delivers, carriesRegistrations: false, tally: .counted("click")) }
        var endpoint: String { host.description }
        var hosts: [CampaignHost] { [host] }
        func carries(_ event: Event) -> Bool {
            if case .tracking(let hit) = event { return hit.action == .click }
            return false
        }
        func request(for event: Event, to host: CampaignHost) -> CampaignRequest? {
            guard case .tracking(let hit) = event else { return .tracking(TrackingEvent.placeholder, host: host) }
            return .tracking(hit, host: host)
        }
    }

    @Test(
        "a sink of the test's own, driven by the one lane: exactly its 100 clicks of 300 hits arrive, its cursor passes all 300 plus the registration"
    )
    func anEventSinkOfOneFile() async throws {
        let running = try await RunningEmulator.start()
        let directory = temporaryDirectory("sink-clicks")
        defer { removeTree(directory) }
        let host = try CampaignHost(parsing: running.url, role: "test")
        let sink = ClicksOnlySink(host: host)
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [.cursorFile(sink.cursorName)], logger: quietLogger)
        let actions: [TrackingAction] = [.impression, .open, .click]
        _ = try await log.append((1...300).map { hit($0, action: actions[$0 % 3]) } + [registration(token: "t1")])
        let transport = try HTTPClientTransport(connectionsPerHost: 2)
        let lane = UploadLane(
            sink: sink, transport: transport, store: try await ForwardingStore(dataDirectory: directory),
            source: .cursor(log), configuration: UploadConfiguration(), deduplicates: true, logger: quietLogger)
        try await lane.run(until: await log.durableSequence)
        let statistics = await lane.stats
        #expect(statistics.delivered == 100)
        #expect(statistics.passedOver == 201)
        #expect(await log.cursorPosition(sink.cursorName) == 302)
        let hits = await running.emulator.recorder.hits
        #expect(hits.values.reduce(0, +) == 100)
        #expect(Set(hits.keys.map(\.tag)) == [2], "clicks go upstream as tag 2")
        #expect(Set(hits.keys.map(\.messageId)) == Set((1...300).filter { $0 % 3 == 2 }.map { String($0, radix: 16) }))
        await transport.shutdown()
        await log.close()
        await running.stop()
    }

    @Test("the central relay's answers: taken, resend from an earlier sequence, refusals that wait, failures behind the breaker")
    func centralRelayAnswers() throws {
        let sink = CentralRelaySink(host: try CampaignHost(parsing: "http://127.0.0.1:9", role: "test"), token: "secret", batchEvents: 50)
        let sequences: Range<UInt64> = 101..<151
        #expect(sink.answer(.delivered, sequences: sequences) == .taken)
        #expect(sink.answer(.rejected(status: 409, body: #"{"error":"gap","expected":42}"#), sequences: sequences) == .resendFrom(42))
        // An expected sequence at or past the batch cannot be sent again from: the batch waits a second.
        guard case .refused(_, let wait409, _) = sink.answer(.rejected(status: 409, body: #"{"expected":101}"#), sequences: sequences) else {
            Issue.record("a 409 without an earlier expected sequence must be a refusal")
            return
        }
        #expect(wait409 == .seconds(1))
        guard case .refused(let reason, let wait403, _) = sink.answer(.rejected(status: 403, body: "no"), sequences: sequences) else {
            Issue.record("a 403 must be a refusal")
            return
        }
        #expect(reason == "HTTP 403: no")
        #expect(wait403 == .seconds(60))
        guard case .refused(_, let wait400, _) = sink.answer(.rejected(status: 400, body: "bad"), sequences: sequences) else {
            Issue.record("a 400 must be a refusal")
            return
        }
        #expect(wait400 == .seconds(10))
        #expect(
            sink.answer(.retryable(reason: "HTTP 503", retryAfter: .seconds(3), status: 503), sequences: sequences)
                == .failed(reason: "HTTP 503", retryAfter: .seconds(3)))
        #expect(sink.answer(.notSent, sequences: sequences) == .sendAgain)
        let request = sink.request(for: [], sequences: sequences, epoch: 2, relayID: "598ef5b4-921c-4ba5-b8e1-ef71a5e2a510")
        #expect(request.pathAndQuery == "/v1/relay/batches")
        #expect(request.headers.first { $0.name == "Relay-Sequences" }?.value == "101-151")
        #expect(request.headers.first { $0.name == "Relay-Epoch" }?.value == "2")
        #expect(request.headers.first { $0.name == "Authorization" }?.value == "Bearer secret")
        #expect(sink.cursorName == "upload-relay")
        #expect(sink.consumer == CentralRelaySink.consumer)
        #expect((sink as any Sink).destinationName == "central relay")
        #expect(CentralRelaySink(host: sink.host, token: "t", batchEvents: 0).batchEvents == 1)
    }

    @Test("the Campaign sinks carry their own kind and write the SDKs' requests byte for byte")
    func campaignSinks() throws {
        let host = try CampaignHost(parsing: "https://track.example", role: "test")
        let tracking = TrackingHostSink(host: host)
        let marketing = MarketingHostSink(host: host)
        let click = hit(55336, delivery: "f0190", action: .click)
        let registered = registration(token: "t1")
        #expect(tracking.carries(click) && !tracking.carries(registered))
        #expect(marketing.carries(registered) && !marketing.carries(click))
        // Another tenant's events never go to the default tenant's hosts.
        let tenant = try TenantName(validating: "brand-a")
        var tenantClick = click
        tenantClick.tenant = tenant
        var tenantRegistered = registered
        tenantRegistered.tenant = tenant
        #expect(!tracking.carries(tenantClick) && !marketing.carries(tenantRegistered))
        #expect(tracking.request(for: click, to: tracking.host)?.url == "https://track.example/r/?id=hd828,f0190,2")
        #expect(marketing.request(for: registered, to: marketing.host)?.pathAndQuery == "/nms/mobile/1/registerAndroid.jssp")
        #expect([tracking.cursorName, marketing.cursorName] == ["upload-tracking", "upload-marketing"])
        #expect(tracking.destinationName == "tracking host")
        #expect(marketing.destinationName == "marketing host")
    }
}

extension TrackingEvent {
    /// A hit the clicks-only sink never sends (it carries only tracking events).
    fileprivate static let placeholder = TrackingEvent(
        action: .click, messageId: MessageID(decimal: 1), deliveryId: "none", time: EventTime(nanosecondsSinceEpoch: 0))
}

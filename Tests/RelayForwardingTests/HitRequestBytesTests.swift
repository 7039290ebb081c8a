import CampaignEmulator
import CampaignProtocol
import NIOCore
import RelayForwarding
import RelayTestSupport
import Testing

/// The tracking pipeline writes its requests as bytes of its own (no HTTP encoder): they must be
/// what the encoder wrote, and a connection's one timer must still give up on a silent host.
@Suite("Tracking hit requests")
struct HitRequestBytesTests {
    @Test("a hit's request is byte for byte what NIO's encoder sent for the same head (seen on the wire)")
    func sameBytesAsTheEncoder() throws {
        let host = try CampaignHost(parsing: "http://127.0.0.1:18092", role: "test")
        let buffer = HitRequestBytes(host: host).request(for: "/r/?id=h9a7834e,f1065,1", allocator: ByteBufferAllocator())
        #expect(String(buffer: buffer) == "GET /r/?id=h9a7834e,f1065,1 HTTP/1.1\r\nHost: 127.0.0.1:18092\r\nUser-Agent: campaign-relay\r\n\r\n")
    }

    @Test("the host's path prefix goes before the path; a host without a port is named without one")
    func prefixAndHost() throws {
        let host = try CampaignHost(parsing: "https://t.example.com/campaign/", role: "test")
        let buffer = HitRequestBytes(host: host).request(for: "/r/?id=hd828,f0190,2", allocator: ByteBufferAllocator())
        #expect(String(buffer: buffer) == "GET /campaign/r/?id=hd828,f0190,2 HTTP/1.1\r\nHost: t.example.com\r\nUser-Agent: campaign-relay\r\n\r\n")
    }

    @Test(
        "only visible ASCII goes in a request line",
        arguments: [
            ("/r/?id=hd828,f0190,1", true), ("/r/?id=6b6499a8-9d43-4bc5-acf0-b6aeb96846f6,f.0_1~,2", true), ("", false),
            ("/r/?id=hd828,f 0190,1", false), ("/r/?id=hd828,f0190,1\r\nX-Injected: 1", false), ("/r/?id=hd828,fé,1", false),
            ("/r/?id=hd828,f\u{7F},1", false),
        ])
    func validTargets(target: String, valid: Bool) throws {
        let bytes = HitRequestBytes(host: try CampaignHost(parsing: "http://127.0.0.1:1", role: "test"))
        #expect(bytes.isValidTarget(target) == valid)
    }

    @Test("a target a request line cannot carry is not written: the hit is retryable, and says why")
    func invalidTargetNotSent() async throws {
        let running = try await RunningEmulator.start()
        let host = try CampaignHost(parsing: running.url, role: "test")
        let pipeline = try TrackingHitPipeline(host: host, connections: 1, timeout: .seconds(5))
        // A hit the emulator answers first, on the connection the bad one will find idle: a server
        // stopped under a connection it accepted but never read from can trap in NIO
        // (NIOAsyncWriter deinitialised unfinished), which a test must not provoke.
        #expect(await pipeline.send([CampaignRequest.carrying(hit(1), to: host)]) == [.delivered])
        let request = CampaignRequest(method: .get, host: host, pathAndQuery: "/r/?id=hd828,f 0190,1", headers: [], body: nil)
        let outcomes = await pipeline.send([request])
        await pipeline.shutdown()
        await running.stop()
        guard case .retryable(let reason, _, _, _) = try #require(outcomes.first) else {
            Issue.record("expected a retryable outcome, got \(outcomes)")
            return
        }
        #expect(reason.contains("does not allow"))
        #expect(await running.emulator.recorder.acceptedHits == 1, "only the good hit reached the emulator")
    }

    @Test("a connection's timer, armed by an answered hit, gives up on the next hit at that hit's own deadline")
    func timeoutAfterAnAnsweredHit() async throws {
        let running = try await RunningEmulator.start()
        let host = try CampaignHost(parsing: running.url, role: "test")
        // Long enough for a first hit on a busy machine; the second is answered only after it.
        let timeout = Duration.seconds(4)
        let pipeline = try TrackingHitPipeline(host: host, connections: 1, timeout: timeout)
        let firstSent = ContinuousClock.now
        #expect(await pipeline.send([CampaignRequest.carrying(hit(1), to: host)]) == [.delivered])
        // The first hit's timer is still pending, due at firstSent + 4 s. Letting a second pass
        // before the next hit is the scenario itself, not a wait for something to happen: a
        // connection that kept the first hit's deadline would give up on the next one at least
        // a second early.
        try await Task.sleep(for: .seconds(1))
        var faults = EmulatorFaults()
        faults.latencyMilliseconds = 6_000
        running.emulator.currentFaults = faults
        let started = ContinuousClock.now
        let outcomes = await pipeline.send([CampaignRequest.carrying(hit(2), to: host)])
        let waited = ContinuousClock.now - started
        await pipeline.shutdown()
        // The emulator takes the late hit once its latency is over; stopping it while that
        // request sleeps would cancel a handler mid-request.
        let deadline = ContinuousClock.now + .seconds(60)
        while await running.emulator.recorder.acceptedHits < 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        await running.stop()
        guard case .retryable(let reason, _, _, _) = try #require(outcomes.first) else {
            Issue.record("expected a timeout, got \(outcomes)")
            return
        }
        #expect(reason.contains("no answer within"))
        #expect(started - firstSent >= .seconds(1))
        #expect(waited >= timeout - .milliseconds(100), "gave up after \(waited), before the hit's own deadline")
    }
}

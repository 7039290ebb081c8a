import CampaignEmulator
import CampaignProtocol
import NIOCore
import NIOEmbedded
import NIOHTTP1
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayForwarding

/// The tracking pipeline writes its requests as bytes of its own (no HTTP encoder): they must be
/// what the encoder wrote, and a connection's one timer must still give up on a silent host.
@Suite("Tracking hit requests", .tier(.fast))
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
        // Delivered, or on a starved machine retryable: either way the connection has been served.
        let good = await pipeline.send([try #require(CampaignRequest.carrying(hit(1), to: host))])
        let request = CampaignRequest(method: .get, host: host, pathAndQuery: "/r/?id=hd828,f 0190,1", headers: [], body: nil)
        let outcomes = await pipeline.send([request])
        await pipeline.shutdown()
        await running.stop()
        guard case .retryable(let reason, _, _, _) = try #require(outcomes.first) else {
            Issue.record("expected a retryable outcome, got \(outcomes)")
            return
        }
        #expect(reason.contains("does not allow"))
        // The good hit may still arrive after a client that gave up on it; the bad one never does.
        #expect(await running.emulator.recorder.acceptedHits <= 1, "only the good hit reached the emulator (\(good))")
    }

    @Test("a connection's one timer gives up on a hit at that hit's own deadline, also when an earlier answered hit armed it")
    func timerFollowsTheHitInFlight() throws {
        // An embedded loop: time moves only when the test moves it, so a busy machine changes nothing.
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let decoder = HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes)
        let handler = HitResponseHandler(decoder: decoder)
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HitResponseDecoder(decoder: decoder)))
        try channel.pipeline.syncOperations.addHandler(handler)
        var answers: [Result<HitResponseHandler.Answer, any Error>] = []
        let request = ByteBuffer(string: "GET /r/?id=h1,f1,1 HTTP/1.1\r\nHost: t\r\n\r\n")
        handler.send(request, on: channel, timeout: .seconds(4)) { answers.append($0) }
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
        #expect(answers.count == 1)
        #expect((try? answers.first?.get())?.status == 200)
        // The first hit's timer is still pending, due at 4 s; the next hit goes at 1 s, due at 5 s.
        loop.advanceTime(by: .seconds(1))
        handler.send(request, on: channel, timeout: .seconds(4)) { answers.append($0) }
        loop.advanceTime(by: .seconds(3))
        #expect(answers.count == 1, "the next hit was given up at the first one's deadline")
        loop.advanceTime(by: .milliseconds(999))
        #expect(answers.count == 1)
        loop.advanceTime(by: .milliseconds(1))
        #expect(answers.count == 2)
        guard case .failure(let error)? = answers.last else {
            Issue.record("expected the next hit to time out, got \(answers)")
            return
        }
        #expect("\(error)".contains("no answer within"))
        _ = try? channel.finish()
    }
}

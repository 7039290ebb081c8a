import Foundation
import NIOCore
import NIOPosix
import RelayCore
import RelayForwarding
import RelayLog
import RelayProcessTestSupport
import RelayServer
import Synchronization
import TestTiers
import Testing

/// `TrackingHitHandler`: SDK hits answered on the event loop, as the router would answer them.
@Suite("SDK hits answered on the event loop", .serialized, .timeLimit(.minutes(5)), .tier(.fast))
struct TrackingHitPathTests {
    static let pipelined = [
        "GET /r/?id=hd828,f0190,1 HTTP/1.1\r\nHost: relay\r\n\r\n",
        "GET /r/?id=bad HTTP/1.1\r\nHost: relay\r\n\r\n",
        "GET /r/?foo=1 HTTP/1.1\r\nHost: relay\r\n\r\n",
        "POST /v1/events HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: 71\r\n\r\n"
            + #"[{"kind":"track","action":"open","messageId":"7","deliveryId":"f0190"}]"#,
        // %64 is "d": the router's query decoding, on both paths.
        "GET /r/?id=h%64829,f0190,2 HTTP/1.1\r\nHost: relay\r\n\r\n",
        "GET /r/test HTTP/1.1\r\nHost: relay\r\n\r\n",
        "GET /r/?id=hd830,f0191,1 HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n",
    ]

    @Test(
        "pipelined hits, refusals and other requests are answered in order, byte for byte as the router answers them (Date aside), and stored and counted alike"
    )
    func answersAsTheRouterDoes() async throws {
        var answers: [[String]] = []
        var metrics: [[String]] = []
        var stored: [Int] = []
        for onEventLoop in [true, false] {
            let server = try await RunningServer.start { $0.answersTrackingHitsOnEventLoop = onEventLoop }
            let connection = try await RawConnection.open(port: server.port)
            try await connection.send(Self.pipelined.joined())
            // The last request asks to close: the server closes once it has answered all seven.
            try await waitUntil("the server to answer and close") { connection.isClosed }
            answers.append(RawConnection.answers(in: connection.received))
            let http = TestHTTPClient()
            stored.append(try await http.nextSequence(server.url) - 1)
            let exposition = try await http.get(server.url + "/metrics").body.split(separator: "\n").map(String.init)
            metrics.append(
                exposition.filter { line in
                    ["/r", "/r/test", "/v1/events"].contains { route in
                        line.hasPrefix(#"relay_http_requests_total{route="\#(route)""#)
                            || line.hasPrefix(#"relay_http_request_duration_seconds_count{route="\#(route)""#)
                    } || line.hasPrefix("relay_requests_rejected_total ") || line.hasPrefix(#"relay_events_ingested_total{kind="track"}"#)
                }.sorted())
            await http.shutdown()
            await server.stop()
        }
        #expect(
            answers[0].map { $0.prefix(12) } == [
                "HTTP/1.1 200", "HTTP/1.1 400", "HTTP/1.1 400", "HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 200",
            ])
        #expect(answers[0].indices.contains(3) && answers[0][3].hasSuffix(#"{"accepted":1,"firstSequence":2,"lastSequence":2}"#), "\(answers[0])")
        #expect(answers[0] == answers[1])
        #expect(stored == [4, 4])
        #expect(metrics[0].count == 9, "\(metrics[0].joined(separator: "\n"))")
        #expect(metrics[0] == metrics[1])
    }

    /// A tenant's hits, a refused one, an unknown tenant's and a default tenant's hit, pipelined.
    static let tenantPipelined = [
        "GET /brand-a/r/?id=hd828,f0190,1 HTTP/1.1\r\nHost: relay\r\n\r\n",
        "GET /brand-a/r/?id=bad HTTP/1.1\r\nHost: relay\r\n\r\n",
        "GET /nope/r/?id=hd829,f0190,1 HTTP/1.1\r\nHost: relay\r\n\r\n",
        "GET /r/?id=hd82a,f0190,2 HTTP/1.1\r\nHost: relay\r\n\r\n",
        "GET /brand-a/r/?id=hd82b,f0190,2 HTTP/1.1\r\nHost: relay\r\n\r\n",
        "GET /brand-a/r/test HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n",
    ]

    @Test(
        "a tenant's hits (/brand-a/r/?id=) answered on the event loop as the router answers them, stored as brand-a's and counted under route /{tenant}/r; an unknown tenant's get the router's 404 and store nothing"
    )
    func tenantHitsAsTheRouterDoes() async throws {
        let brandA = try TenantName(validating: "brand-a")
        var answers: [[String]] = []
        var metrics: [[String]] = []
        var stored: [[String]] = []
        for onEventLoop in [true, false] {
            let server = try await RunningServer.start { configuration in
                configuration.answersTrackingHitsOnEventLoop = onEventLoop
                configuration.tenants = [
                    TenantConfiguration(destinations: TenantDestinations(tenant: brandA, trackingHost: nil, marketingHost: nil))
                ]
            }
            let connection = try await RawConnection.open(port: server.port)
            try await connection.send(Self.tenantPipelined.joined())
            try await waitUntil("the server to answer all six and close") { connection.isClosed }
            answers.append(RawConnection.answers(in: connection.received))
            let http = TestHTTPClient()
            let exposition = try await http.get(server.url + "/metrics").body.split(separator: "\n").map(String.init)
            metrics.append(
                exposition.filter { line in
                    ["/r", "/{tenant}/r", "/{tenant}/r/test"].contains { route in
                        line.hasPrefix(#"relay_http_requests_total{route="\#(route)""#)
                            || line.hasPrefix(#"relay_http_request_duration_seconds_count{route="\#(route)""#)
                    } || line.hasPrefix("relay_requests_rejected_total ")
                }.sorted())
            await http.shutdown()
            await server.stop()
            // The log, read back: each event with its tenant.
            stored.append(
                try RelayChainTests.logged(server.dataDirectory).map { logged in
                    guard case .tracking(let hit) = logged.event else { return "\(logged.sequence) not a hit" }
                    return "\(logged.sequence) \(hit.messageId) \(hit.deliveryId) \(hit.action) \(logged.event.tenant.displayName)"
                })
        }
        #expect(
            answers[0].map { $0.prefix(12) } == ["HTTP/1.1 200", "HTTP/1.1 400", "HTTP/1.1 404", "HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 200"],
            "\(answers[0])")
        // An SDK path's 404 is a line of text, and names no tenant to a request without the relay's admin token.
        let notFound = try #require(answers[0].dropFirst(2).first)
        #expect(
            notFound.hasSuffix(
                #"no tenant "nope" on this relay: tenant paths are /{tenant}/r/?id=…, /{tenant}/r/test, /{tenant}/nms/mobile/1/registerIOS.jssp, /{tenant}/nms/mobile/1/registerAndroid.jssp, /{tenant}/v1/events; tenants are [tenant.NAME] tables of serve --config (the relay's admin token gets their names here; campaign-relay config check lists them)"#
                    + "\n"), "\(notFound)")
        #expect(answers[0] == answers[1], "the event loop's answers are the router's, byte for byte")
        #expect(stored[0] == ["1 hd828 f0190 impression brand-a", "2 hd82a f0190 open default", "3 hd82b f0190 open brand-a"], "\(stored[0])")
        #expect(stored[0] == stored[1])
        #expect(
            metrics[0] == [
                #"relay_http_request_duration_seconds_count{route="/r"} 1"#,
                #"relay_http_request_duration_seconds_count{route="/{tenant}/r"} 4"#,
                #"relay_http_request_duration_seconds_count{route="/{tenant}/r/test"} 1"#,
                #"relay_http_requests_total{route="/r",method="GET",status="200"} 1"#,
                #"relay_http_requests_total{route="/{tenant}/r",method="GET",status="200"} 2"#,
                #"relay_http_requests_total{route="/{tenant}/r",method="GET",status="400"} 1"#,
                #"relay_http_requests_total{route="/{tenant}/r",method="GET",status="404"} 1"#,
                #"relay_http_requests_total{route="/{tenant}/r/test",method="GET",status="200"} 1"#,
                "relay_requests_rejected_total 1",
            ], "\(metrics[0].joined(separator: "\n"))")
        #expect(metrics[0] == metrics[1])
    }

    @Test("a connection busy with hits alone is not closed by the idle timeout, which closes it once it is quiet")
    func idleTimeoutCountsHits() async throws {
        let server = try await RunningServer.start { $0.idleTimeout = .seconds(2) }
        let connection = try await RawConnection.open(port: server.port)
        let hit = "GET /r/?id=hd828,f0190,1 HTTP/1.1\r\nHost: relay\r\n\r\n"
        try await connection.send(hit)
        try await waitUntil("the first answer") { RawConnection.answers(in: connection.received).count == 1 }
        // Every answer has the same size (the Date header has a fixed width).
        let answerBytes = connection.received.count
        var answered = 1
        let started = ContinuousClock.now
        // More than twice the idle timeout, in rounds of 20 pipelined hits.
        while ContinuousClock.now - started < .seconds(5) {
            try await connection.send(String(repeating: hit, count: 20))
            answered += 20
            try await waitUntil("\(answered) answers") { connection.received.count == answered * answerBytes || connection.isClosed }
            try #require(!connection.isClosed, "closed after \(connection.received.count / answerBytes) answers")
        }
        #expect(RawConnection.answers(in: connection.received).allSatisfy { $0.hasPrefix("HTTP/1.1 200 OK\r\n") })
        try await waitUntil("the quiet connection to be closed by the idle timeout") { connection.isClosed }
        await server.stop()
    }
}

/// One TCP connection, written and read as bytes: requests exactly as given, pipelined at will.
final class RawConnection: Sendable {
    private let channel: any Channel
    private let box: ReceivedBytes

    private init(channel: any Channel, box: ReceivedBytes) {
        self.channel = channel
        self.box = box
    }

    /// Connects to `127.0.0.1:port`.
    static func open(port: Int) async throws -> RawConnection {
        let box = ReceivedBytes()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collector(box: box)) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, box: box)
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    /// Everything received so far.
    var received: [UInt8] { box.bytes.withLock { $0 } }

    /// Whether the server closed the connection.
    var isClosed: Bool { box.closed.load(ordering: .relaxed) }

    /// The complete answers in `bytes`, each with its `Date` header's value blanked.
    static func answers(in bytes: [UInt8]) -> [String] {
        var answers: [String] = []
        var rest = bytes[...]
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while let headEnd = rest.firstRange(of: separator) {
            let head = String(decoding: rest[rest.startIndex..<headEnd.upperBound], as: UTF8.self)
            let length =
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            guard rest.endIndex - headEnd.upperBound >= length else { break }
            let body = String(decoding: rest[headEnd.upperBound..<(headEnd.upperBound + length)], as: UTF8.self)
            let blanked = head.split(separator: "\r\n", omittingEmptySubsequences: false)
                .map { $0.lowercased().hasPrefix("date:") ? "Date: -" : String($0) }.joined(separator: "\r\n")
            answers.append(blanked + body)
            rest = rest[(headEnd.upperBound + length)...]
        }
        return answers
    }

    private final class ReceivedBytes: Sendable {
        let bytes = Mutex<[UInt8]>([])
        let closed = Atomic<Bool>(false)
    }

    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let box: ReceivedBytes

        init(box: ReceivedBytes) {
            self.box = box
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            box.bytes.withLock { $0.append(contentsOf: buffer.readableBytesView) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            box.closed.store(true, ordering: .relaxed)
            context.fireChannelInactive()
        }
    }
}

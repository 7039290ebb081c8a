import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import RelayCore

/// The real transport: AsyncHTTPClient with keep-alive connections, a bounded number per host.
public final class HTTPClientTransport: CampaignTransport {
    private let client: HTTPClient
    /// The most bytes of a rejection's body kept for the dead-letter store.
    public static let keptBodyBytes = 1024

    /// A transport keeping up to `connectionsPerHost` connections open to each host.
    public init(connectionsPerHost: Int = 8) {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, connectionsPerHost))
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func send(_ request: CampaignRequest, timeout: Duration) async -> DeliveryOutcome {
        var http = HTTPClientRequest(url: request.url)
        http.method = request.method == .get ? .GET : .POST
        http.headers.add(name: "User-Agent", value: "campaign-relay")
        for header in request.headers { http.headers.add(name: header.name, value: header.value) }
        if let body = request.body { http.body = .bytes(ByteBuffer(bytes: body)) }
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        do {
            let response = try await client.execute(http, timeout: .milliseconds(milliseconds))
            // Read (and keep the start of) the body, so the connection can be reused.
            var kept: [UInt8] = []
            for try await chunk in response.body where kept.count < Self.keptBodyBytes {
                kept += chunk.readableBytesView.prefix(Self.keptBodyBytes - kept.count)
            }
            return DeliveryOutcome.classify(
                status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                body: String(decoding: kept, as: UTF8.self), now: SystemClock.wallSeconds()
            )
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            return .retryable(reason: "no answer within \(timeout)", retryAfter: nil)
        } catch {
            return .retryable(reason: "\(error)", retryAfter: nil)
        }
    }

    /// Closes the connections.
    public func shutdown() async {
        try? await client.shutdown()
    }
}

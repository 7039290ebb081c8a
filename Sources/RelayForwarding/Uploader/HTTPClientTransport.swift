import AsyncHTTPClient
public import CampaignProtocol
public import NIOCore
import NIOHTTP1
public import NIOSSL
import RelayCore

/// The real transport: AsyncHTTPClient with keep-alive connections, a bounded number per host.
///
/// Tracking hits (`GET`) follow up to ``UploadConfiguration/maximumRedirects`` redirections, as the
/// SDKs' HTTP stacks do, and are delivered when the last answer is 200; registrations (`POST`) do
/// not follow them (a redirection is their final answer).
public final class HTTPClientTransport: CampaignTransport {
    private let client: HTTPClient
    private let retryStatuses: Set<Int>
    private let maximumRedirects: Int
    /// The most bytes of a rejection's body kept for the dead-letter store.
    public static let keptBodyBytes = 1024

    /// A transport keeping up to `connectionsPerHost` connections open to each host, retrying
    /// `retryStatuses`, following `maximumRedirects` redirections of `GET` requests, trusting
    /// `caFile`'s authorities besides the system's, and presenting `clientCertificate` to hosts
    /// that ask for one.
    ///
    /// - Throws: ``UpstreamTLS/Failure`` when `caFile` or `clientCertificate` cannot be used.
    public convenience init(
        connectionsPerHost: Int = 8, retryStatuses: Set<Int> = DeliveryOutcome.defaultRetryStatuses, maximumRedirects: Int = 3,
        caFile: String? = nil, clientCertificate: UpstreamTLS.ClientCertificate? = nil, eventLoopGroup: (any EventLoopGroup)? = nil
    ) throws(UpstreamTLS.Failure) {
        self.init(
            connectionsPerHost: connectionsPerHost, retryStatuses: retryStatuses, maximumRedirects: maximumRedirects,
            tls: try UpstreamTLS.clientConfiguration(trusting: caFile, presenting: clientCertificate), eventLoopGroup: eventLoopGroup)
    }

    /// A transport as above whose `https` connections use `tls`: the one TLS set-up of an upstream,
    /// shared with the tracking host's pipeline (``TrackingHitPipeline``).
    public init(
        connectionsPerHost: Int = 8, retryStatuses: Set<Int> = DeliveryOutcome.defaultRetryStatuses, maximumRedirects: Int = 3,
        tls: TLSConfiguration, eventLoopGroup: (any EventLoopGroup)? = nil
    ) {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, connectionsPerHost))
        // A refused connection fails the request at once: the lane's backoff and breaker decide
        // when to try again (and say so), instead of the pool retrying silently until the deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        configuration.tlsConfiguration = tls
        client = HTTPClient(eventLoopGroupProvider: eventLoopGroup.map { .shared($0) } ?? .singleton, configuration: configuration)
        self.retryStatuses = retryStatuses
        self.maximumRedirects = maximumRedirects
    }

    public func send(_ request: CampaignRequest, timeout: Duration) async -> DeliveryOutcome {
        var url = request.url
        var redirects = 0
        while true {
            let outcome = await attempt(request, url: url, timeout: timeout)
            guard case .redirected(let status, let location) = outcome else { return outcome }
            guard redirects < maximumRedirects, let next = Self.resolve(location, against: url) else {
                return .rejected(
                    status: status, body: "redirected to \(location) after \(redirects) redirections (at most \(maximumRedirects) are followed)")
            }
            redirects += 1
            url = next
        }
    }

    private func attempt(_ request: CampaignRequest, url: String, timeout: Duration) async -> DeliveryOutcome {
        var http = HTTPClientRequest(url: url)
        http.method = request.method == .get ? .GET : .POST
        http.headers.add(name: "User-Agent", value: "campaign-relay")
        for header in request.headers { http.headers.add(name: header.name, value: header.value) }
        if let body = request.body { http.body = .bytes(ByteBuffer(bytes: body)) }
        let milliseconds = timeout.nanoseconds / 1_000_000
        do {
            let response = try await client.execute(http, timeout: .milliseconds(milliseconds))
            // Read (and keep the start of) the body, so the connection can be reused.
            var kept: [UInt8] = []
            for try await chunk in response.body where kept.count < Self.keptBodyBytes {
                kept += chunk.readableBytesView.prefix(Self.keptBodyBytes - kept.count)
            }
            let status = Int(response.status.code)
            if request.method == .get, DeliveryOutcome.redirectStatuses.contains(status), let location = response.headers.first(name: "Location") {
                return .redirected(status: status, location: location)
            }
            return DeliveryOutcome.classify(
                status: status, retryAfter: response.headers.first(name: "Retry-After"), body: String(decoding: kept, as: UTF8.self),
                now: SystemClock.wallSeconds(), retryStatuses: retryStatuses
            )
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            return .retryable(reason: "no answer from \(Self.origin(of: url)) within \(timeout)", retryAfter: nil)
        } catch {
            return .retryable(reason: "cannot reach \(Self.origin(of: url)): \(TransportErrorText.describe(error))", retryAfter: nil)
        }
    }

    /// The absolute URL a `Location` names, relative to `base`; `nil` when it is not http(s).
    static func resolve(_ location: String, against base: String) -> String? {
        if let scheme = location.firstRange(of: "://") {
            let name = location[..<scheme.lowerBound].lowercased()
            return name == "http" || name == "https" ? location : nil
        }
        if location.hasPrefix("//") {
            guard let scheme = base.firstRange(of: "://") else { return nil }
            return base[..<scheme.lowerBound] + ":" + location
        }
        if location.hasPrefix("/") { return origin(of: base) + location }
        let withoutQuery = base.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard let slash = withoutQuery.lastIndex(of: "/"), slash > (withoutQuery.firstRange(of: "://")?.upperBound ?? withoutQuery.startIndex) else {
            return origin(of: base) + "/" + location
        }
        return withoutQuery[...slash] + location
    }

    /// `scheme://authority` of `url`.
    static func origin(of url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return url }
        return String(url[..<slash])
    }

    /// Closes the connections.
    public func shutdown() async {
        try? await client.shutdown()
    }
}

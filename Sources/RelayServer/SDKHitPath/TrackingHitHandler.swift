import CampaignProtocol
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import RelayCore

/// Answers the SDKs' tracking hits (`GET /r/?id=…`, and `GET /{tenant}/r/?id=…` of a tenant this
/// relay has) on the connection's event loop, where they were read, and hands every other request
/// (an unknown tenant's included, which the router answers 404) on to the router.
///
/// Through the router a durable hit crossed four threads and came back across them (event loop,
/// task pool, the log's actor, its I/O thread): scheduler switches and wake-ups were most of what
/// it cost beyond a server that stores nothing. Here the event loop decodes the hit and hands it to
/// the log with a completion (``EventIngestor/append(_:completion:)``); the group commit that
/// makes it durable calls it, and the answer is written back on the loop.
///
/// A client sees what the router's `GET /r/` would answer: the same statuses, headers and words
/// (``SDKRoutes/trackingHit(uri:)`` decides for both), the same metrics. What it relies on:
/// - **Order.** HTTP/1.1 answers go out in request order, so a hit is answered here only while no
///   request handed to the router is unanswered; while a hit waits for its sync, the requests
///   read after it (pipelined) are held, and the channel is not read further, until it is answered.
/// - **Connection state.** ``TrackingHitChannel`` puts this handler after Hummingbird's
///   connection-state handler, which therefore sees hits as requests: they count as activity for
///   the idle timeout, and a graceful shutdown closes the connection once the hit is answered.
/// - **Closing.** A request that asks to close the connection (`Connection: close`) is left to the
///   router, which closes it.
final class TrackingHitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// The route's label in `relay_http_requests_total`, as the router names it.
    static let route = "/" + CampaignEndpoint.tracking
    /// The label of a tenant's hits, as the router names `:tenant/r`.
    static let tenantRoute = "/{tenant}/" + CampaignEndpoint.tracking

    private let ingestor: EventIngestor
    private let tenants: TenantDirectory
    private let serverName: String
    private let date: HTTPDateHeader
    /// Requests handed to the router and not yet answered.
    private var routed = 0
    /// Whether the rest of a request answered here (its end, a body) is still to be read and dropped.
    private var discardingRequest = false
    /// When the hit that waits for the log arrived; `nil` when none waits.
    private var waitingSince: ContinuousClock.Instant?
    /// Request parts read while a hit waits, handled in order once it is answered.
    private var held = CircularBuffer<HTTPRequestPart>()
    /// Whether the channel asked for a read while a hit waited.
    private var readDeferred = false
    /// Set when the handler leaves the pipeline (the connection closed): a late answer is dropped.
    private var removed = false
    /// The route label of the hit being answered (``route`` or ``tenantRoute``).
    private var route = TrackingHitHandler.route

    /// A handler storing hits through `ingestor` for the default tenant and `tenants`, naming
    /// itself `serverName` in answers.
    init(ingestor: EventIngestor, tenants: TenantDirectory, serverName: String, date: HTTPDateHeader) {
        self.ingestor = ingestor
        self.tenants = tenants
        self.serverName = serverName
        self.date = date
    }

    /// The scope of a hit answered here: `GET /r/?…`, the form every SDK sends (the default
    /// tenant), or `GET /{tenant}/r/?…` of a tenant of `tenants`, without a wish to close the
    /// connection; `nil` for anything else, which goes to the router.
    static func scope(answeringHere request: HTTPRequest, tenants: TenantDirectory) -> TenantScope? {
        guard request.method == .get, let path = request.path?.utf8, path.first == UInt8(ascii: "/") else { return nil }
        let hit = "/\(CampaignEndpoint.tracking)/?".utf8
        let scope: TenantScope
        if path.starts(with: hit) {
            scope = tenants.defaultScope
        } else {
            // `/{tenant}/r/?`: the segment up to the next slash must name a tenant.
            let rest = path.dropFirst()
            guard let slash = rest.firstIndex(of: UInt8(ascii: "/")), path[slash...].starts(with: hit),
                let named = tenants.scope(named: Substring(rest[..<slash]))
            else { return nil }
            scope = named
        }
        if let connection = request.headerFields[.connection], connection.lowercased().contains("close") { return nil }
        return scope
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        removed = true
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        handle(unwrapInboundIn(data), context: context)
    }

    func read(context: ChannelHandlerContext) {
        if waitingSince == nil {
            context.read()
        } else {
            readDeferred = true
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Only the router's answers pass here: this handler writes its own from its context, below.
        if case .end = unwrapOutboundIn(data) { routed = max(0, routed - 1) }
        context.write(data, promise: promise)
    }

    private func handle(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        if discardingRequest {
            if case .end = part { discardingRequest = false }
            return
        }
        guard waitingSince == nil else {
            held.append(part)
            return
        }
        switch part {
        case .head(let request) where routed == 0:
            guard let scope = Self.scope(answeringHere: request, tenants: tenants) else {
                routed += 1
                context.fireChannelRead(wrapInboundOut(part))
                return
            }
            discardingRequest = true
            answer(request, scope: scope, context: context)
        case .head:
            routed += 1
            context.fireChannelRead(wrapInboundOut(part))
        case .body, .end:
            context.fireChannelRead(wrapInboundOut(part))
        }
    }

    private func answer(_ request: HTTPRequest, scope: TenantScope, context: ChannelHandlerContext) {
        let arrived = ContinuousClock.now
        route = scope.name == nil ? Self.route : Self.tenantRoute
        switch SDKRoutes.trackingHit(uri: URI(request.path ?? ""), scope: scope) {
        case .failure(let rejection):
            ingestor.metrics.requestsRejected.increment()
            write(.badRequest, rejection.message + "\n", arrived: arrived, context: context)
        case .success(let event):
            waitingSince = arrived
            let loop = context.eventLoop
            let handler = NIOLoopBound(self, eventLoop: loop)
            let boundContext = NIOLoopBound(context, eventLoop: loop)
            ingestor.append([event]) { result in
                loop.execute { handler.value.stored(result, context: boundContext.value) }
            }
        }
    }

    /// The waiting hit is stored (or refused): answer it, then handle what arrived meanwhile.
    private func stored(_ result: Result<Range<UInt64>, EventIngestor.Refusal>, context: ChannelHandlerContext) {
        guard let arrived = waitingSince, !removed else { return }
        waitingSince = nil
        switch result {
        case .success:
            write(.ok, "", arrived: arrived, context: context)
        case .failure(.unavailable(let message, let seconds)):
            ingestor.metrics.requestsUnavailable.increment()
            // While the relay stops, keep-alive clients are sent elsewhere (as IngestAnswerMiddleware does).
            write(.serviceUnavailable, message + "\n", retryAfter: seconds, closing: ingestor.isShuttingDown, arrived: arrived, context: context)
        }
        guard !held.isEmpty else { return resumeReading(context: context) }
        while waitingSince == nil, !removed, let part = held.popFirst() { handle(part, context: context) }
        // The router's channel hands reads on at the end of a read.
        context.fireChannelReadComplete()
        resumeReading(context: context)
    }

    private func resumeReading(context: ChannelHandlerContext) {
        if waitingSince == nil, readDeferred {
            readDeferred = false
            context.read()
        }
    }

    /// Writes an answer with the headers the router's would have (`Responses.text`, then
    /// Hummingbird's `Date` and `Server`), and counts it as the route metrics would.
    private func write(
        _ status: HTTPResponse.Status, _ text: String, retryAfter: Int? = nil, closing: Bool = false, arrived: ContinuousClock.Instant,
        context: ChannelHandlerContext
    ) {
        let body = context.channel.allocator.buffer(string: text)
        var fields = HTTPFields()
        fields[.contentType] = Responses.plainText
        fields[.contentLength] = String(body.readableBytes)
        if let retryAfter { fields[.retryAfter] = String(retryAfter) }
        if closing { fields[.connection] = "close" }
        fields[.date] = date.now
        fields[.server] = serverName
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: fields))), promise: nil)
        if body.readableBytes > 0 { context.write(wrapOutboundOut(.body(body)), promise: nil) }
        if closing {
            let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in boundContext.value.close(promise: nil) }
        } else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        ingestor.metrics.recordRequest(route: route, method: "GET", status: Int(status.code), duration: ContinuousClock.now - arrived)
    }
}

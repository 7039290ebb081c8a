import NIOCore
import NIOHTTP1

/// Sends one request at a time on a connection and reads its response.
///
/// The request goes out as bytes ``HitRequestBytes`` made: no HTTP encoder, header validator or
/// write-observing decoder runs on the way out. The response decoder is told of each request
/// here instead (it must know one is outstanding, and that it was not a `HEAD`).
final class HitResponseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = ByteBuffer

    /// The `GET` the response decoder is told of for each request.
    private static let requestHead = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")

    struct Answer {
        var status: Int
        var retryAfter: String?
        var location: String?
        var body: String
        var keepAlive: Bool
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// What to call with the answer to the request in flight.
    private var pending: ((Result<Answer, any Error>) -> Void)?
    /// When the request in flight is given up; `nil` between requests.
    private var deadline: NIODeadline?
    /// The connection's one timer. It is armed at a request's deadline and, when it fires with a
    /// later request in flight, armed again at that one's: a timer per connection every `timeout`
    /// at most, not one scheduled and cancelled per request.
    private var timer: Scheduled<Void>?
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []
    private let decoder: HTTPResponseDecoder

    /// A handler for the connection whose responses `decoder` reads.
    init(decoder: HTTPResponseDecoder) {
        self.decoder = decoder
    }

    /// Sends `request` (a whole HTTP/1.1 request) on `channel` and calls `answered` once, on the
    /// event loop, with its answer, or with an error when none came within `timeout` or the
    /// connection failed first. A callback rather than a future: no promise is made per hit.
    func send(
        _ request: ByteBuffer, on channel: any Channel, timeout: TimeAmount, answered: @escaping (Result<Answer, any Error>) -> Void
    ) {
        pending = answered
        head = nil
        body = []
        // The loop's clock, which its timers follow (an embedded loop's in tests).
        let deadline = channel.eventLoop.now + timeout
        self.deadline = deadline
        if timer == nil { armTimer(at: deadline, on: channel, timeout: timeout) }
        decoder.write(data: .head(Self.requestHead))
        channel.writeAndFlush(request, promise: nil)
    }

    private func armTimer(at deadline: NIODeadline, on channel: any Channel, timeout: TimeAmount) {
        let bound = NIOLoopBound(self, eventLoop: channel.eventLoop)
        timer = channel.eventLoop.scheduleTask(deadline: deadline) {
            bound.value.timerFired(on: channel, timeout: timeout)
        }
    }

    /// Fails the request in flight if its deadline passed, else waits for that deadline.
    private func timerFired(on channel: any Channel, timeout: TimeAmount) {
        timer = nil
        guard let deadline else { return }
        if deadline > channel.eventLoop.now {
            armTimer(at: deadline, on: channel, timeout: timeout)
        } else {
            fail(Failure(description: "no answer within \(timeout)"))
            channel.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let response):
            head = response
        case .body(var buffer):
            if body.count < HTTPClientTransport.keptBodyBytes,
                let bytes = buffer.readBytes(length: min(buffer.readableBytes, HTTPClientTransport.keptBodyBytes - body.count))
            {
                body += bytes
            }
        case .end:
            guard let response = head, let answered = pending else { return }
            pending = nil
            deadline = nil
            answered(
                .success(
                    Answer(
                        status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                        location: response.headers.first(name: "Location"),
                        body: String(decoding: body, as: UTF8.self), keepAlive: response.isKeepAlive
                    )
                )
            )
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(Failure(description: "connection closed before the answer"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    private func fail(_ error: any Error) {
        deadline = nil
        timer?.cancel()
        timer = nil
        guard let answered = pending else { return }
        pending = nil
        answered(.failure(error))
    }
}

/// The response decoder of a hit connection, without the write observation of NIO's own
/// (`ByteToMessageHandler` with `HTTPResponseDecoder` reads every outbound write as an
/// `HTTPClientRequestPart`): the requests are bytes, and ``HitResponseHandler`` tells `decoder`
/// of each one itself.
struct HitResponseDecoder: ByteToMessageDecoder {
    typealias InboundOut = HTTPClientResponsePart

    /// The decoder doing the work, shared with the connection's ``HitResponseHandler``.
    let decoder: HTTPResponseDecoder

    mutating func decoderAdded(context: ChannelHandlerContext) { decoder.decoderAdded(context: context) }

    mutating func decoderRemoved(context: ChannelHandlerContext) { decoder.decoderRemoved(context: context) }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        try decoder.decode(context: context, buffer: &buffer)
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decoder.decodeLast(context: context, buffer: &buffer, seenEOF: seenEOF)
    }
}

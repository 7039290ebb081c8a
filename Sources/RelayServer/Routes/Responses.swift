import Hummingbird
import NIOCore
import RelayCore
import RelayEventJSON

/// Building the server's answers.
enum Responses {
    /// The `Content-Type` of every plain-text answer (the router's and ``TrackingHitHandler``'s).
    static let plainText = "text/plain; charset=utf-8"

    static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: plainText], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func json(_ status: HTTPResponse.Status, _ json: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: json)))
    }

    static func error(_ status: HTTPResponse.Status, _ message: String, problems: [EventBatchDecoder.Problem] = []) -> Response {
        json(status, errorJSON(message, problems: problems))
    }

    /// A refusal in the form of the route's answers: `{"error":message}` for the relay's own API
    /// (`json`), or the message as a line of plain text for the SDK endpoints, which Campaign
    /// answers in text and whose callers read no JSON.
    static func refusal(_ status: HTTPResponse.Status, _ message: String, json: Bool) -> Response {
        json ? error(status, message) : text(status, message + "\n")
    }

    /// The JSON of an ``ErrorAnswer``.
    static func errorJSON(_ message: String, problems: [EventBatchDecoder.Problem] = []) -> String {
        APIJSON.text(ErrorAnswer(error: message, problems: problems))
    }

    /// 503 with `Retry-After`: the relay cannot store now, the sender should retry. (While the
    /// relay shuts down, ``IngestAnswerMiddleware`` closes the connection too.)
    static func unavailable(_ message: String, retryAfterSeconds: Int, json: Bool) -> Response {
        var response = refusal(.serviceUnavailable, message, json: json)
        response.headers[.retryAfter] = String(retryAfterSeconds)
        return response
    }

    static func tooLarge(_ limit: Int, json: Bool) -> Response {
        refusal(.contentTooLarge, "request body larger than \(limit) bytes", json: json)
    }
}

extension Request {
    /// The body ``BodyLimitMiddleware`` collected (within the route's limit); `nil` when it cannot be read.
    func collectedBody() async -> [UInt8]? {
        guard let buffer = try? await body.collect(upTo: .max) else { return nil }
        return Array(buffer: buffer)
    }
}

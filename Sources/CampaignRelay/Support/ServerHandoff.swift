import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import RelayCore
import RelayEventJSON
import RelayLog
import RelayServer

/// Hands events to the `serve` that holds the data directory, through its `POST /v1/events`, when
/// a command cannot open the log itself. The acknowledgement is the same: a 200 means the server
/// fdatasync'ed the events.
///
/// The server's address comes from its record in the data directory and is on this machine, so
/// an `https` server's certificate is not checked against a CA (it is often a private one).
final class ServerHandoff: Sendable {
    /// What became of one batch.
    enum Outcome {
        /// Stored durably, with these sequence numbers.
        case stored(Range<UInt64>)
        /// Refused as invalid: the indices (in the batch) and reasons, nothing stored.
        case refused([(index: Int, field: String?, message: String)])
        /// Not stored; the server said why (503: log full, stopping) or could not be reached.
        case failed(String)
    }

    let record: ServerRecord
    private let client: HTTPClient

    init(record: ServerRecord) {
        self.record = record
        var configuration = HTTPClient.Configuration()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        configuration.tlsConfiguration = tls
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// A one-line description for notices: "the server (pid 123) at http://127.0.0.1:8080".
    var name: String { "the server (pid \(record.pid)) at \(record.url)" }

    /// Sends `events` as one NDJSON batch: to `/v1/events`, or, when they all belong to one tenant,
    /// to that tenant's `/{tenant}/v1/events` (the path gives the tenant, which the body may not).
    func send(_ events: [Event]) async -> Outcome {
        let tenant = events.first?.tenant
        guard events.allSatisfy({ $0.tenant == tenant }) else {
            return .failed("a batch of several tenants' events cannot go to \(name) at once: send each tenant's apart")
        }
        var request = HTTPClientRequest(url: record.url + (tenant.map { "/\($0.text)" } ?? "") + "/v1/events")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-ndjson")
        let lines = events.map { event in
            var untenanted = event
            untenanted.tenant = nil
            return EventEncoder.json(untenanted)
        }
        request.body = .bytes(ByteBuffer(string: lines.joined(separator: "\n")))
        do {
            let response = try await client.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 16 << 20)
            let object = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
            switch response.status.code {
            case 200:
                guard let first = object?["firstSequence"] as? Int, let last = object?["lastSequence"] as? Int else {
                    return .failed("\(name) answered 200 without sequence numbers")
                }
                return .stored(UInt64(first)..<UInt64(last + 1))
            case 400:
                let problems = (object?["problems"] as? [[String: Any]] ?? []).compactMap { problem -> (Int, String?, String)? in
                    guard let index = problem["index"] as? Int else { return nil }
                    return (index, problem["field"] as? String, problem["message"] as? String ?? "refused")
                }
                if problems.isEmpty { return .failed("\(name) refused the batch: \(object?["error"] as? String ?? String(buffer: body))") }
                return .refused(problems)
            default:
                return .failed("\(name) answered \(response.status.code): \(object?["error"] as? String ?? String(buffer: body))")
            }
        } catch {
            return .failed("cannot reach \(name): \(error)")
        }
    }

    /// Sends `body` (JSON) to `path` with `token` as the Bearer admin token, and returns the
    /// answer's status and body; `nil` with why when the server cannot be reached.
    func exchange(_ method: HTTPMethod, path: String, body: String?, token: String?) async -> Result<(status: UInt, body: String), RuntimeFailure> {
        var request = HTTPClientRequest(url: record.url + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        do {
            // An erasure rewrites segments: it may take minutes on a large log.
            let response = try await client.execute(request, timeout: .seconds(3600))
            let answer = try await response.body.collect(upTo: 64 << 20)
            return .success((response.status.code, String(buffer: answer)))
        } catch {
            return .failure(RuntimeFailure("cannot reach \(name): \(error)"))
        }
    }

    /// The server's last durable sequence number, from `/readyz`.
    func lastDurableSequence() async -> UInt64? {
        guard let response = try? await client.execute(HTTPClientRequest(url: record.url + "/readyz"), timeout: .seconds(10)),
            let body = try? await response.body.collect(upTo: 1 << 16),
            let object = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any],
            let last = object["lastDurableSequence"] as? Int
        else { return nil }
        return UInt64(last)
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    /// The running server holding `dataDirectory` when `error` says the log is locked; `nil` for
    /// any other error, or when no server is recorded (another kind of process holds the lock).
    static func server(holding dataDirectory: String, after error: any Error) -> ServerRecord? {
        guard case .locked? = error as? LogError else { return nil }
        return ServerRecord.running(dataDirectory: dataDirectory)
    }
}

import HTTPTypes
import Hummingbird
import RelayCore
import RelayIO
import RelayLog

/// `POST /v1/events`: a batch of events in the relay's JSON format, all or nothing, optionally
/// idempotent (`Idempotency-Key`).
struct EventsRoute: Sendable {
    let ingestor: EventIngestor
    let idempotency: IdempotencyStore
    let maximumBytes: Int
    let maximumEvents: Int
    /// Where the log is read back for a request retried after a crash (blocking reads).
    let logReads = BlockingExecutor(name: "idempotency-log")

    static let idempotencyKey = HTTPField.Name("Idempotency-Key") ?? .contentType
    static let replayed = HTTPField.Name("Idempotent-Replayed") ?? .contentType

    func add(to routes: RouteTable) {
        routes.post("v1/events") { request, _ in await handle(request) }
    }

    /// The body media types taken: a JSON array, or NDJSON (one event per line).
    static let mediaTypes: Set<String> = ["application/json", "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines"]

    func handle(_ request: Request) async -> Response {
        if let type = request.mediaType, !Self.mediaTypes.contains(type) {
            return Responses.error(
                .unsupportedMediaType, "Content-Type \(type) is not taken; send a JSON array as application/json or NDJSON as application/x-ndjson"
            )
        }
        guard let body = await request.bodyBytes(limit: maximumBytes) else { return Responses.tooLarge(maximumBytes, json: true) }
        guard let key = request.headers[Self.idempotencyKey] else {
            return await ingest(body, defaultTime: .now()).response
        }
        guard !key.isEmpty, key.utf8.count <= 255 else { return Responses.error(.badRequest, "Idempotency-Key must be 1 to 255 characters") }
        guard await idempotency.claim(key) else {
            return Responses.error(.conflict, "a request with this Idempotency-Key is under way; retry when it is answered")
        }
        defer { Task { await idempotency.release(key) } }
        let digest = IdempotencyStore.digest(body)
        do {
            switch try await idempotency.entry(key) {
            case .completed(let recorded, let status, let answer):
                guard recorded == digest else { return Responses.error(.unprocessableContent, "Idempotency-Key was used for a different request body") }
                var response = Responses.json(HTTPResponse.Status(code: status), answer)
                response.headers[Self.replayed] = "true"
                return response
            case .pending(let recorded, let start, let timeNanoseconds):
                guard recorded == digest else { return Responses.error(.unprocessableContent, "Idempotency-Key was used for a different request body") }
                let time = EventTime(nanosecondsSinceEpoch: timeNanoseconds, fractionDigits: 3)
                return await finish(key, ingest(body, defaultTime: time, resumingAfterCrashFrom: start))
            case nil:
                let time = EventTime.now()
                try await idempotency.recordPending(key, digest: digest, startSequence: await ingestor.log.durableSequence, defaultTime: time)
                return await finish(key, ingest(body, defaultTime: time))
            }
        } catch {
            return Responses.unavailable("could not record the Idempotency-Key: \(error)", retryAfterSeconds: 5, json: true)
        }
    }

    private struct Outcome {
        var response: Response
        /// Whether the answer is final (remembered for the key): success or invalid input.
        var final: Bool
        var status: Int
        var body: String
    }

    private func finish(_ key: String, _ outcome: Outcome) async -> Response {
        guard outcome.final else { return outcome.response }
        do {
            try await idempotency.recordCompleted(key, status: outcome.status, body: outcome.body)
        } catch {
            // The events are stored; the pending record lets a retry find them in the log.
        }
        return outcome.response
    }

    private func ingest(_ body: [UInt8], defaultTime: EventTime, resumingAfterCrashFrom start: UInt64? = nil) async -> Outcome {
        var events: [Event]
        switch EventBatchDecoder.decode(body, defaultTime: defaultTime, maximumEvents: maximumEvents) {
        case .failure(let problems):
            return refused(problems.list)
        case .success(let decoded):
            events = decoded
        }
        let keyProblems = events.enumerated().compactMap { index, event in
            ingestor.keyProblem(event).map { EventBatchDecoder.Problem(index: index, field: $0.field, message: $0.message) }
        }
        if !keyProblems.isEmpty { return refused(keyProblems) }
        // After a crash between the append and the answer, the events may already be in the log.
        let total = events.count
        var found = (count: 0, first: UInt64?.none)
        if let start {
            found = await alreadyStored(events, from: start)
            events.removeFirst(found.count)
        }
        do {
            let range = events.isEmpty ? nil : try await ingestor.append(events)
            // The sequence numbers of the request's first and last events.
            let first = found.first ?? range?.lowerBound ?? 0
            let last = range.map { $0.upperBound - 1 } ?? (first + UInt64(max(total, 1)) - 1)
            let json = "{\"accepted\":\(total),\"firstSequence\":\(first),\"lastSequence\":\(last)}"
            return Outcome(response: Responses.json(.ok, json), final: true, status: 200, body: json)
        } catch {
            switch error {
            case .unavailable(let message, let seconds):
                let response = Responses.unavailable(message, retryAfterSeconds: seconds, json: true, closeConnection: ingestor.isShuttingDown)
                return Outcome(response: response, final: false, status: 503, body: "")
            }
        }
    }

    /// How many of `events` (from the first) are already in the log at or after `start`, and where
    /// they begin; the log is read on ``logReads``.
    private func alreadyStored(_ events: [Event], from start: UInt64) async -> (count: Int, first: UInt64?) {
        let (walDirectory, fileSystem) = (ingestor.log.walDirectory, ingestor.log.fileSystem)
        let end = await ingestor.log.durableSequence
        return await logReads.run { () -> (count: Int, first: UInt64?) in
            Self.match(events, walDirectory: walDirectory, fileSystem: fileSystem, from: start, below: end)
        }
    }

    private static func match(
        _ events: [Event], walDirectory: String, fileSystem: any FileSystem, from start: UInt64, below end: UInt64
    ) -> (count: Int, first: UInt64?) {
        guard let head = events.first else { return (0, nil) }
        var reader = LogReader(walDirectory: walDirectory, fileSystem: fileSystem, from: start)
        defer { reader.close() }
        var matched = 0
        var first: UInt64?
        while let batch = try? reader.read(maximumEvents: 4096, below: end), !batch.events.isEmpty {
            for logged in batch.events {
                if first == nil {
                    if logged.event == head {
                        first = logged.sequence
                        matched = 1
                    }
                } else if matched < events.count, logged.event == events[matched] {
                    matched += 1
                } else {
                    return (matched, first)
                }
                if matched == events.count { return (matched, first) }
            }
        }
        return (matched, first)
    }

    private func refused(_ problems: [EventBatchDecoder.Problem]) -> Outcome {
        ingestor.metrics.requestsRejected.increment()
        let json = Responses.errorJSON("\(problems.count) problem(s); nothing was stored", problems: problems)
        return Outcome(response: Responses.json(.badRequest, json), final: true, status: 400, body: json)
    }
}

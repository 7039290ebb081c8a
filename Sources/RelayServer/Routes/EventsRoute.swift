import HTTPTypes
import Hummingbird
import RelayCore
import RelayEventJSON
import RelayIO
import RelayLog

/// `POST /v1/events` and `POST /{tenant}/v1/events`: a batch of events in the relay's JSON format,
/// all or nothing, optionally idempotent (`Idempotency-Key`, remembered per tenant), stored as the
/// default tenant's or as the path's tenant's.
struct EventsRoute: RouteGroup, Sendable {
    let ingestor: EventIngestor
    let idempotency: IdempotencyStore
    let maximumBytes: Int
    let maximumEvents: Int
    /// The tenants, each with its integration-key rule; the fields only relays set (and `tenant`)
    /// are refused where the batch is decoded.
    let tenants: TenantDirectory
    /// Where the log is read back for a request retried after a crash (blocking reads).
    let logReads = BlockingExecutor(name: "idempotency-log")

    static let idempotencyKey = HTTPField.Name.relay("Idempotency-Key")
    static let replayed = HTTPField.Name.relay("Idempotent-Replayed")

    func add(to table: RouteTable) {
        table.addForEachTenant(tenants) { routes, prefix, scope in
            routes.ingest(ingestor, maximumBodyBytes: maximumBytes, json: true).post(prefix + "v1/events") { request, context in
                await handle(request, scope: scope(context))
            }
        }
    }

    /// The name `key` is remembered under: the tenant's name and the key, so that two tenants
    /// using the same key are two requests. A header value cannot hold 0x1F, so no key of the
    /// default tenant (remembered as it is) can be taken for a tenant's.
    static func storedKey(_ key: String, scope: TenantScope) -> String {
        scope.name.map { "\($0.text)\u{1F}\(key)" } ?? key
    }

    /// The media type of a JSON array of events.
    static let arrayMediaType = "application/json"

    /// The body media types taken: a JSON array, or NDJSON (one event per line, under any of its
    /// names).
    static let mediaTypes: Set<String> = [
        arrayMediaType, "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines",
    ]

    func handle(_ request: Request, scope: TenantScope) async -> Response {
        if let type = request.mediaType, !Self.mediaTypes.contains(type) {
            return Responses.error(
                .unsupportedMediaType, "Content-Type \(type) is not taken; send a JSON array as application/json or NDJSON as application/x-ndjson"
            )
        }
        guard let body = await request.collectedBody() else { return Responses.tooLarge(maximumBytes, json: true) }
        // Before the Idempotency-Key is looked at: the key remembers the body, not its type, and
        // the same body sent again with the right type must not get this answer back.
        if let problem = Self.formProblem(of: body, mediaType: request.mediaType) { return refused([problem]).response }
        guard let key = request.headers[Self.idempotencyKey] else {
            return await ingest(body, scope: scope, defaultTime: .now()).response
        }
        guard !key.isEmpty, key.utf8.count <= 255 else { return Responses.error(.badRequest, "Idempotency-Key must be 1 to 255 characters") }
        let stored = Self.storedKey(key, scope: scope)
        guard await idempotency.claim(stored) else {
            return Responses.error(.conflict, "a request with this Idempotency-Key is under way; retry when it is answered")
        }
        // Released before the answer leaves, so a retry sent as soon as it arrives finds the
        // recorded answer, not "under way".
        let response = await handleClaimed(stored, key: key, body: body, scope: scope)
        await idempotency.release(stored)
        return response
    }

    /// Answers a request whose key `stored` this request holds.
    private func handleClaimed(_ stored: String, key: String, body: [UInt8], scope: TenantScope) async -> Response {
        let digest = IdempotencyStore.digest(body)
        do {
            switch try await idempotency.entry(stored) {
            case .completed(let recorded, let status, let answer):
                guard recorded == digest else {
                    return Responses.error(.unprocessableContent, "Idempotency-Key was used for a different request body")
                }
                var response = Responses.json(HTTPResponse.Status(code: status), answer)
                response.headers[Self.replayed] = "true"
                return response
            case .pending(let recorded, let start, let timeNanoseconds):
                guard recorded == digest else {
                    return Responses.error(.unprocessableContent, "Idempotency-Key was used for a different request body")
                }
                let time = EventTime(nanosecondsSinceEpoch: timeNanoseconds, fractionDigits: 3)
                return await finish(stored, ingest(body, scope: scope, defaultTime: time, key: key, resumingAfterCrashFrom: start))
            case nil:
                let time = EventTime.now()
                try await idempotency.recordPending(stored, digest: digest, startSequence: await ingestor.log.durableSequence, defaultTime: time)
                return await finish(stored, ingest(body, scope: scope, defaultTime: time, key: key))
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

    /// Stores the batch in `body`. With a `key`, every event carries the request's identity (the
    /// key and its index); resuming after a crash, the events of the request already in the log
    /// from `start` on are found by that identity and not stored again.
    private func ingest(
        _ body: [UInt8], scope: TenantScope, defaultTime: EventTime, key: String? = nil, resumingAfterCrashFrom start: UInt64? = nil
    ) async -> Outcome {
        var events: [Event]
        switch EventBatchDecoder.decode(body, defaultTime: defaultTime, maximumEvents: maximumEvents, admission: scope.eventsAdmission) {
        case .failure(let problems):
            return refused(problems.list)
        case .success(let decoded):
            events = decoded
        }
        scope.claim(&events)
        let total = events.count
        // After a crash between the append and the answer, some or all of the events may be in the log.
        var stored: [Int: UInt64] = [:]
        if let key {
            for index in events.indices { events[index].request = RequestIdentity(key: key, index: index) }
            if let start { stored = await storedEvents(of: key, tenant: scope.name, count: total, from: start) }
        }
        let missing = stored.isEmpty ? events : events.filter { event in event.request.map { stored[$0.index] == nil } ?? true }
        do {
            let range = missing.isEmpty ? nil : try await ingestor.append(missing)
            let (first, last) = Self.firstAndLast(of: total, stored: stored, appended: missing, at: range)
            let json = APIJSON.text(StoredBatch(accepted: total, firstSequence: first, lastSequence: last))
            return Outcome(response: Responses.json(.ok, json), final: true, status: 200, body: json)
        } catch {
            switch error {
            case .unavailable(let message, let seconds):
                let response = Responses.unavailable(message, retryAfterSeconds: seconds, json: true)
                return Outcome(response: response, final: false, status: 503, body: "")
            }
        }
    }

    /// The sequence numbers of a request's first and last events: those found `stored` earlier (by
    /// index in the request), or those just `appended` at `range`.
    private static func firstAndLast(
        of total: Int, stored: [Int: UInt64], appended: [Event], at range: Range<UInt64>?
    ) -> (first: UInt64, last: UInt64) {
        guard !stored.isEmpty else {
            // Nothing was found: the whole batch is in `range` (an empty batch has no sequences).
            guard let range else { return (0, 0) }
            return (range.lowerBound, range.upperBound - 1)
        }
        var sequences = stored
        if let range {
            for (offset, event) in appended.enumerated() {
                if let index = event.request?.index { sequences[index] = range.lowerBound + UInt64(offset) }
            }
        }
        return (sequences[0] ?? 0, sequences[total - 1] ?? 0)
    }

    /// The sequence numbers, by index in the request, of the events stored for the request of
    /// `tenant` with `key` (of `count` events) at or after `start`; the log is read on ``logReads``.
    private func storedEvents(of key: String, tenant: TenantName?, count: Int, from start: UInt64) async -> [Int: UInt64] {
        let reader = LogFollower.Steps(log: ingestor.log, from: start)
        let end = await ingestor.log.durableSequence
        return await logReads.run { () -> [Int: UInt64] in Self.find(key, tenant: tenant, count: count, reader: reader, below: end) }
    }

    /// Reads to the end of the log unless every index is found first: a request resumed after one
    /// crash stores its missing events in another append, further on, and a second crash can
    /// leave both parts for the next retry to find.
    private static func find(_ key: String, tenant: TenantName?, count: Int, reader: LogFollower.Steps, below end: UInt64) -> [Int: UInt64] {
        var reader = reader
        defer { reader.close() }
        var found: [Int: UInt64] = [:]
        while found.count < count, let batch = try? reader.read(maximumEvents: 4096, below: end), !batch.events.isEmpty {
            for logged in batch.events {
                if let request = logged.event.request, request.key == key, logged.event.tenant == tenant, found[request.index] == nil {
                    found[request.index] = logged.sequence
                }
            }
        }
        return found
    }

    /// Why `body` is not of the form its Content-Type declares, or `nil` when it is (or declares
    /// none, or is empty, which the decoder answers).
    ///
    /// The declared type decides the form: `application/json` is a JSON array of events (one
    /// event too: `[{…}]`), the NDJSON types one event per line (one event on one line too).
    /// Without a Content-Type, the decoder reads a body starting with `[` as an array and any
    /// other as NDJSON. A bare JSON object sent as `application/json` was once taken as a line of
    /// NDJSON, while the same object written over several lines was refused line by line: here
    /// both get one answer naming the forms taken.
    static func formProblem(of body: [UInt8], mediaType: String?) -> EventBatchDecoder.Problem? {
        guard let mediaType, let first = body.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else { return nil }
        let isArray = first == UInt8(ascii: "[")
        if mediaType == arrayMediaType, !isArray {
            return EventBatchDecoder.Problem(
                index: nil, field: nil,
                message:
                    "Content-Type application/json takes a JSON array of events ([{…},{…}], one event as [{…}]), and this body is not an array: wrap the events in [ ], or send them one per line as application/x-ndjson"
            )
        }
        if mediaType != arrayMediaType, isArray {
            return EventBatchDecoder.Problem(
                index: nil, field: nil,
                message:
                    "Content-Type \(mediaType) takes one event per line (NDJSON), and this body is a JSON array: send it as application/json, or one event per line without [ ]"
            )
        }
        return nil
    }

    private func refused(_ problems: [EventBatchDecoder.Problem]) -> Outcome {
        let json = Responses.errorJSON("\(problems.count) problem\(problems.count == 1 ? "" : "s"); nothing was stored", problems: problems)
        return Outcome(response: Responses.json(.badRequest, json), final: true, status: 400, body: json)
    }
}

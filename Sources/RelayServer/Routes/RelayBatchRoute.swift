import Hummingbird
import RelayChain
import RelayCore
import RelayEventJSON

/// `POST /v1/relay/batches`: other relays hand their events to this one (docs/relay-protocol.md).
struct RelayBatchRoute: RouteGroup, Sendable {
    let receiver: RelayBatchReceiver
    let token: String
    /// The tenants this relay forwards: a batch holding another tenant's event is refused, and
    /// waits at the sender until this relay declares that tenant.
    let tenants: TenantDirectory

    /// The largest body taken, compressed.
    static let maximumBodyBytes = RelayBatchBody.maximumPlainBytes

    /// The 401's words. They are read on the edge relay, whose log shows the central's answer, so
    /// they name the option to set there (`--upstream-token`) and the one it must equal here
    /// (`--relay-token`): the two sides' names differ, and the edge's operator may run only one.
    static let refusal =
        "relay batches need Authorization: Bearer <this relay's --relay-token>: on the edge relay, set --upstream-token (env CAMPAIGN_RELAY_UPSTREAM_TOKEN) to the same value as --relay-token (env CAMPAIGN_RELAY_RELAY_TOKEN) here, on the central relay"

    func add(to table: RouteTable) {
        let routes = table.group(AdminAuthentication(token: token, refusal: Self.refusal))
        routes.ingest(receiver.ingestor, maximumBodyBytes: Self.maximumBodyBytes, json: true).post("v1/relay/batches") { request, _ in
            await receive(request)
        }
    }

    func receive(_ request: Request) async -> Response {
        let (origin, sender): (OriginLedger.BatchOrigin, RelayPosition)
        switch Self.origin(of: request) {
        case .success(let value): (origin, sender) = value
        case .failure(let problem): return Responses.error(.badRequest, problem.message)
        }
        guard let body = await request.collectedBody() else { return Responses.tooLarge(Self.maximumBodyBytes, json: true) }
        let events: [SequencedEvent]
        do {
            events = try RelayBatchBody.decode(body, sequences: origin.sequences)
        } catch {
            return Responses.error(.badRequest, "the batch body is malformed: \(error)")
        }
        // Stored, such an event would have no lane to leave by, and retention could drop it
        // before the tenant is declared: it is refused, and the sender keeps it and tries again.
        if let undeclared = events.lazy.compactMap({ $0.event.tenant }).first(where: { tenants.scope(named: Substring($0.text)) == nil }) {
            return Responses.error(
                .unprocessableContent,
                "tenant \(undeclared.text) of relay \(origin.relayID)'s events is not declared on this relay: declare [tenant.\(undeclared.text)] with its hosts in serve --config here; the sender keeps the batch and sends it again"
            )
        }
        do {
            switch try await receiver.receive(events, origin: origin, sender: sender) {
            case .stored(let appended, let alreadyStored, let next):
                return Responses.json(.ok, APIJSON.text(RelayBatchAnswer(appended: appended, alreadyStored: alreadyStored, next: next)))
            case .gap(let expected):
                return Responses.json(
                    .conflict,
                    APIJSON.text(
                        RelayBatchGap(
                            error:
                                "sequences \(expected) to \(origin.sequences.lowerBound - 1) of relay \(origin.relayID) are missing: send from \(expected)",
                            expected: expected)))
            case .staleEpoch(let current):
                return Responses.json(
                    .forbidden,
                    APIJSON.text(
                        RelayBatchStale(
                            error:
                                "epoch \(origin.epoch) of relay \(origin.relayID) is older than its current epoch \(current): this data directory is an old copy; stop it",
                            currentEpoch: current)))
            }
        } catch {
            switch error {
            case .unavailable(let message, let seconds):
                return Responses.unavailable(message, retryAfterSeconds: seconds, json: true)
            }
        }
    }

    /// The batch's origin from its headers: `Relay-Id`, `Relay-Epoch`, `Relay-Sequences: FIRST-END`;
    /// and the sending relay's position at the batch's first sequence.
    static func origin(of request: Request) -> Result<(OriginLedger.BatchOrigin, RelayPosition), EventInputError> {
        guard let relayID = request.headers[.relayID], let epochText = request.headers[.relayEpoch],
            let sequencesText = request.headers[.relaySequences]
        else {
            return .failure(EventInputError(field: nil, "a batch needs the headers Relay-Id, Relay-Epoch and Relay-Sequences"))
        }
        let bounds = sequencesText.split(separator: "-", omittingEmptySubsequences: false)
        guard let epoch = UInt32(epochText), bounds.count == 2, let first = UInt64(bounds[0]), let end = UInt64(bounds[1]), first >= 1, end > first
        else {
            return .failure(
                EventInputError(field: nil, "Relay-Epoch must be a number and Relay-Sequences FIRST-END with 1 <= FIRST < END (END excluded)"))
        }
        let position: RelayPosition
        do {
            position = try RelayPosition(relayID: relayID, epoch: epoch, sequence: first, field: "Relay-Id")
        } catch {
            return .failure(error)
        }
        return .success((OriginLedger.BatchOrigin(relayID: position.relayID, epoch: epoch, sequences: first..<end), position))
    }
}

/// `200`: `{"alreadyStored":B,"appended":N,"next":X}`.
struct RelayBatchAnswer: Encodable {
    var appended: Int
    var alreadyStored: Bool
    var next: UInt64
}

/// `409`: `{"error":"…","expected":X}`.
struct RelayBatchGap: Encodable {
    var error: String
    var expected: UInt64
}

/// `403`: `{"currentEpoch":C,"error":"…"}`.
struct RelayBatchStale: Encodable {
    var error: String
    var currentEpoch: UInt32
}

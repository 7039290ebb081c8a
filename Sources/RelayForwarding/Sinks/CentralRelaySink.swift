public import CampaignProtocol
import RelayChain
public import RelayCore
public import RelayLog

/// A central relay (`POST /v1/relay/batches`, docs/relay-protocol.md): every event of the log,
/// hits and registrations alike, in ordered batches, each answered once the central relay has it
/// durably (200) or already had it ("already stored", also 200).
public struct CentralRelaySink: BatchSink {
    /// The lane's name in progress, summaries and metrics, beside the uploader's `tracking` and `marketing`.
    public static let laneName = "relay"
    /// The log cursor of the lane (named as the uploader's lanes' cursors are, `upload-<lane>`).
    public static let cursorName = "upload-\(laneName)"
    /// The lane as a consumer of the log: its cursor is its position.
    public static let consumer = LogConsumerDeclaration.cursorFile(cursorName)

    public var name: String { Self.laneName }
    public var kind: SinkKind { .centralRelay }
    public var endpoint: String { host.description }
    public var destinationName: String { "central relay" }
    /// The central relay's address.
    public let host: CampaignHost
    /// The token presented as `Authorization: Bearer …` (the central relay's `--relay-token`).
    public let token: String
    public let batchEvents: Int

    /// The central relay at `host`, presenting `token`, with at most `batchEvents` events per batch.
    public init(host: CampaignHost, token: String, batchEvents: Int = 10_000) {
        self.host = host
        self.token = token
        self.batchEvents = max(1, min(batchEvents, RelayBatchBody.maximumEvents))
    }

    public func request(for events: [SequencedEvent], sequences: Range<UInt64>, epoch: UInt32, relayID: String) -> CampaignRequest {
        // Request identities go along and the central relay drops them (docs/relay-protocol.md).
        CampaignRequest(
            method: .post, host: host, pathAndQuery: "/v1/relay/batches",
            headers: [
                ("Authorization", "Bearer \(token)"), ("Relay-Id", relayID), ("Relay-Epoch", String(epoch)),
                ("Relay-Sequences", "\(sequences.lowerBound)-\(sequences.upperBound)"), ("Content-Type", "application/x-campaign-relay-batch"),
            ],
            body: RelayBatchBody.encode(events, first: sequences.lowerBound)
        )
    }

    public func answer(_ outcome: DeliveryOutcome, sequences: Range<UInt64>) -> BatchAnswer {
        switch outcome {
        case .delivered:
            return .taken
        case .rejected(409, let body):
            if let expected = Self.expected(in: body), expected < sequences.lowerBound { return .resendFrom(expected) }
            return .refused(
                reason: "HTTP 409: \(body)", delay: .seconds(1), logged: "the central relay answered 409 without a usable expected sequence")
        case .rejected(let status, let body):
            // 400, 401, 403, 413: the central relay refuses; events are kept and tried again.
            return .refused(
                reason: "HTTP \(status): \(body)", delay: .seconds(status == 403 ? 60 : 10),
                logged: "the central relay refuses this relay's batches; fix what it says, the events wait")
        case .redirected(let status, let location):
            return .refused(
                reason: "HTTP \(status): redirected to \(location)", delay: .seconds(10),
                logged: "the central relay redirects; give its final URL")
        case .notSent:
            return .sendAgain
        case .retryable(let reason, let retryAfter, _, _):
            return .failed(reason: reason, retryAfter: retryAfter)
        }
    }

    /// `expected` of a 409 answer: `{"error":"…","expected":X}`.
    static func expected(in body: String) -> UInt64? {
        guard case .object(let members)? = try? JSONParser.parse(body),
            case .number(let text)? = members.first(where: { $0.name == "expected" })?.value
        else { return nil }
        return UInt64(text)
    }
}

extension SinkKind {
    /// A central relay: every tenant's events, handed on, in one lane.
    public static let centralRelay = SinkKind(
        label: CentralRelaySink.laneName, scope: .everyTenant, role: .handsOn, carriesRegistrations: true, tally: .handedTo("to the central relay"))
}

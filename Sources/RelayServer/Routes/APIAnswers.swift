import RelayCore
import RelayEventJSON
import RelayForwarding

/// `{"error":…,"problems":[{"field":…,"index":…,"message":…}]}`: every JSON error answer; `problems`
/// only when a batch had some (an `index` of `null` is the body itself).
struct ErrorAnswer: Encodable {
    var error: String
    var problems: [EventBatchDecoder.Problem]

    private enum CodingKeys: String, CodingKey { case error, problems }
    private enum ProblemKeys: String, CodingKey { case index, field, message }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(error, forKey: .error)
        guard !problems.isEmpty else { return }
        var list = container.nestedUnkeyedContainer(forKey: .problems)
        for problem in problems {
            var item = list.nestedContainer(keyedBy: ProblemKeys.self)
            try item.encode(problem.index, forKey: .index)
            try item.encode(problem.field, forKey: .field)
            try item.encode(problem.message, forKey: .message)
        }
    }
}

/// `{"accepted":N,"firstSequence":F,"lastSequence":L}`: a stored `POST /v1/events` batch.
struct StoredBatch: Encodable {
    var accepted: Int
    var firstSequence: UInt64
    var lastSequence: UInt64
}

/// `GET /readyz`: `{"lastDurableSequence":N,"ready":true}`, or with `"ready":false` and a
/// `"reason"` while stopping; with `serve --upstream-relay`, also `"upstream"` (``UpstreamReadiness``).
struct Readiness: Encodable {
    var ready: Bool
    var reason: String?
    var lastDurableSequence: UInt64
    var upstream: UpstreamReadiness?
    var postgres: PostgresReadiness?
}

/// `"postgres":{"failingSince":T,"lag":N,"lastError":…,"nextSequence":S}`: how far the fleet's
/// PostgreSQL has counted this relay's log (`lag` events behind), and why not further while
/// `failingSince` is set. PostgreSQL down does not make the relay unready: it keeps taking events.
struct PostgresReadiness: Encodable {
    var nextSequence: UInt64?
    var lag: UInt64?
    var lastError: String?
    var failingSince: String?

    init(_ state: FleetStatus.State, durable: UInt64) {
        nextSequence = state.nextSequence
        lag = state.nextSequence.map { durable > $0 ? durable - $0 : 0 }
        lastError = state.lastError
        failingSince = state.failingSince?.rfc3339
    }

    private enum CodingKeys: String, CodingKey { case nextSequence, lag, lastError, failingSince }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(nextSequence, forKey: .nextSequence)
        try container.encode(lag, forKey: .lag)
        try container.encode(lastError, forKey: .lastError)
        try container.encode(failingSince, forKey: .failingSince)
    }
}

/// `"upstream":{"backlog":N,"lastFailure":…,"oldestWaitingEvent":T,"reachable":B,"unreachableSince":T}`:
/// the central relay, as the relay lane sees it (times in RFC 3339, `null` when there is none).
struct UpstreamReadiness: Encodable {
    var reachable: Bool
    var unreachableSince: String?
    var backlog: UInt64
    var oldestWaitingEvent: String?
    var lastFailure: String?

    init(_ state: UploadLane.UpstreamState) {
        reachable = state.unreachableSince == nil
        unreachableSince = state.unreachableSince?.rfc3339
        backlog = state.backlog
        oldestWaitingEvent = state.oldestWaitingEvent?.rfc3339
        lastFailure = state.lastFailure
    }

    private enum CodingKeys: String, CodingKey { case reachable, unreachableSince, backlog, oldestWaitingEvent, lastFailure }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(reachable, forKey: .reachable)
        try container.encode(unreachableSince, forKey: .unreachableSince)
        try container.encode(backlog, forKey: .backlog)
        try container.encode(oldestWaitingEvent, forKey: .oldestWaitingEvent)
        try container.encode(lastFailure, forKey: .lastFailure)
    }
}

/// `GET /healthz`: `{"epoch":E,"relayId":"…","status":"ok"}`: the process answers, and which relay
/// (data directory) it is.
struct Health: Encodable {
    var status: String
    var relayId: String
    var epoch: UInt32
}

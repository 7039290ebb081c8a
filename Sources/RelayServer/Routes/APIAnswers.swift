import RelayCore

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
/// `"reason"` while stopping.
struct Readiness: Encodable {
    var ready: Bool
    var reason: String?
    var lastDurableSequence: UInt64
}

/// `GET /healthz`: `{"epoch":E,"relayId":"…","status":"ok"}`: the process answers, and which relay
/// (data directory) it is.
struct Health: Encodable {
    var status: String
    var relayId: String
    var epoch: UInt32
}

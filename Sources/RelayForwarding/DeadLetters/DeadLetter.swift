public import RelayCore

/// An event a Campaign host permanently rejected, kept with the reason.
public struct DeadLetter: Sendable, Hashable {
    /// The dead letter's number in the store.
    public var id: Int64
    /// The event's sequence number in the log.
    public var sequence: UInt64
    /// The tenant of the event, whose host rejected it: its name, or `default`.
    public var tenant: String
    /// The event, in the relay's JSON event format.
    public var eventJSON: String
    /// The URL it was sent to.
    public var url: String
    /// The HTTP status of the host's last answer; 0 when it gave none (``responseBody`` then says
    /// what failed).
    public var status: Int
    /// The start of the response body (at most 1 KiB).
    public var responseBody: String
    /// Why the relay gave up: a permanent rejection, too many attempts, or too old.
    public var reason: String
    /// When it was dead-lettered (RFC 3339).
    public var deadLetteredAt: String
    /// When it was re-queued (RFC 3339), if it was, and the sequence number it was appended with.
    public var requeued: (at: String, sequence: UInt64)?
    /// How it is shown: with its personal data replaced by keyed hashes (see ``redacted(by:)``),
    /// or, `nil`, as stored.
    public var redaction: Pseudonymizer?

    /// A dead letter as stored.
    public init(
        id: Int64, sequence: UInt64, eventJSON: String, url: String, status: Int, responseBody: String, deadLetteredAt: String,
        requeued: (at: String, sequence: UInt64)?, reason: String, tenant: String = TenantName.defaultTenantText
    ) {
        self.id = id
        self.tenant = tenant
        self.sequence = sequence
        self.eventJSON = eventJSON
        self.url = url
        self.status = status
        self.responseBody = responseBody
        self.reason = reason
        self.deadLetteredAt = deadLetteredAt
        self.requeued = requeued
    }

    /// `text` (its URL, reason or the host's answer) with the event's personal values replaced by
    /// their keyed hashes, as ``encode(to:)`` shows them.
    public func hidingPersonalData(in text: String, by pseudonymizer: Pseudonymizer) -> String {
        let (_, personal) = DeadLetterRedaction.redact(try? JSONParser.parse(eventJSON), by: pseudonymizer)
        return personal.reduce(text) { text, value in text.replacing(value.text, with: value.pseudonym) }
    }

    public static func == (lhs: DeadLetter, rhs: DeadLetter) -> Bool { lhs.id == rhs.id && lhs.requeued?.sequence == rhs.requeued?.sequence }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

extension DeadLetter: Encodable {
    private enum CodingKeys: String, CodingKey {
        case id, sequence, tenant, status, url, deadLetteredAt, responseBody, reason, event, requeuedAt, requeuedSequence
    }

    /// The dead letter as the HTTP API and `deadletter list --json` show it; `requeuedAt` and
    /// `requeuedSequence` only once it was re-queued. With a ``redaction``, the event's personal
    /// fields are hashes, and so is any of their values in the URL or the host's answer.
    public func encode(to encoder: any Encoder) throws {
        let event = try? JSONParser.parse(eventJSON)
        let (shown, personal) = redaction.map { DeadLetterRedaction.redact(event, by: $0) } ?? (event, [])
        let hide = { (text: String) in personal.reduce(text) { text, value in text.replacing(value.text, with: value.pseudonym) } }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(sequence, forKey: .sequence)
        try container.encode(tenant, forKey: .tenant)
        try container.encode(status, forKey: .status)
        try container.encode(hide(url), forKey: .url)
        try container.encode(deadLetteredAt, forKey: .deadLetteredAt)
        try container.encode(hide(responseBody), forKey: .responseBody)
        try container.encode(hide(reason), forKey: .reason)
        // The event as an object; a stored text that no longer parses is shown as the text (or,
        // redacted, as its hash: it cannot be told apart from personal data).
        if let shown {
            try container.encode(shown, forKey: .event)
        } else {
            try container.encode(redaction.map { $0.pseudonym(eventJSON) } ?? eventJSON, forKey: .event)
        }
        if let requeued {
            try container.encode(requeued.at, forKey: .requeuedAt)
            try container.encode(requeued.sequence, forKey: .requeuedSequence)
        }
    }
}

/// `{"deadLetters":[…]}`: the envelope of `GET /v1/deadletters` and `deadletter list --json`.
public struct DeadLetterList: Encodable, Sendable {
    /// The dead letters, oldest first.
    public var deadLetters: [DeadLetter]

    /// A list of `deadLetters`, their personal data shown as hashes by `redaction` (`nil`: as stored).
    public init(_ deadLetters: [DeadLetter], redaction: Pseudonymizer?) {
        self.deadLetters = deadLetters.map { letter in
            var shown = letter
            shown.redaction = redaction
            return shown
        }
    }
}

extension CatchUpSummary: Encodable {
    private enum CodingKeys: String, CodingKey {
        case events, transactions, startPosition, endPosition, skippedSequences, seconds, eventsPerSecond
    }

    /// What `aggregate --json` prints; seconds to the millisecond.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(events, forKey: .events)
        try container.encode(transactions, forKey: .transactions)
        try container.encode(startPosition, forKey: .startPosition)
        try container.encode(endPosition, forKey: .endPosition)
        try container.encode(skippedSequences, forKey: .skippedSequences)
        try container.encode((seconds * 1000).rounded() / 1000, forKey: .seconds)
        try container.encode(Int(eventsPerSecond), forKey: .eventsPerSecond)
    }
}

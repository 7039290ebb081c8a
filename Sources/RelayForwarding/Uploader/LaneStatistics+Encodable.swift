extension LaneStatistics: Encodable {
    private enum CodingKeys: String, CodingKey {
        case delivered, skippedDuplicates, deadLettered, rejected, retries, position, backlog
    }

    /// One lane in `upload --json` and `replay --json`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(delivered, forKey: .delivered)
        try container.encode(skippedDuplicates, forKey: .skippedDuplicates)
        try container.encode(deadLettered, forKey: .deadLettered)
        try container.encode(rejected, forKey: .rejected)
        try container.encode(retries, forKey: .retries)
        try container.encode(position, forKey: .position)
        try container.encode(backlog, forKey: .backlog)
    }
}

extension EventTime: Encodable {
    /// An event time in JSON is its RFC 3339 text, as the event format writes it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rfc3339)
    }
}

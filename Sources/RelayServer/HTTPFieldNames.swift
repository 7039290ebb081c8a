import HTTPTypes

extension HTTPField.Name {
    /// A header name the relay spells as a constant (`Idempotency-Key`, `Idempotent-Replayed`).
    ///
    /// `HTTPField.Name`'s initializer fails only for a name that is not an RFC 9110 token; the
    /// constants given here are tokens (the idempotency tests send and read both headers), so the
    /// failure cannot happen at run time: no request or file reaches this.
    static func relay(_ name: StaticString) -> HTTPField.Name {
        guard let valid = HTTPField.Name("\(name)") else { preconditionFailure("\(name) is not an HTTP field name") }
        return valid
    }
}

extension HTTPField.Name {
    /// `Relay-Id`: the relay a batch of handed-on events comes from.
    static let relayID = HTTPField.Name.relay("Relay-Id")
    /// `Relay-Epoch`: the epoch of that relay's data directory the batch's events were logged in.
    static let relayEpoch = HTTPField.Name.relay("Relay-Epoch")
    /// `Relay-Sequences`: `FIRST-END`, the sequence numbers of that relay's log the batch covers.
    static let relaySequences = HTTPField.Name.relay("Relay-Sequences")
}

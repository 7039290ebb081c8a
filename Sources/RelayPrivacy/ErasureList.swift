/// `GET /v1/privacy/erasures`: every finished erasure, oldest first.
public struct ErasureList: Sendable, Codable {
    /// The records of the audit log.
    public var erasures: [ErasureReport]

    /// A list of `erasures`.
    public init(erasures: [ErasureReport]) {
        self.erasures = erasures
    }
}

/// Why an encrypted frame could not be opened, or a frame not sealed.
public enum FrameEncryptionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The frame was sealed with key `keyID`, which the key file does not hold (or no key file was given).
    case keyMissing(keyID: String, available: [String])
    /// The frame's tag fails under the key of that id: the key file's key of that id is not the one
    /// that sealed it, or the frame was altered and its CRC made to match.
    case notAuthentic(keyID: String)
    /// The payload is not an envelope (a frame flagged encrypted that no writer made).
    case malformedEnvelope(String)
    /// The cryptographic library refused an operation.
    case cryptoFailure(String)

    /// The key id the frame needs, when it names one.
    public var keyID: String? {
        switch self {
        case .keyMissing(let id, _), .notAuthentic(let id): id
        case .malformedEnvelope, .cryptoFailure: nil
        }
    }

    public var description: String {
        switch self {
        case .keyMissing(let id, let available) where available.isEmpty:
            "it is encrypted with key \(id), and no --encryption-key-file was given: give the key file that holds \(id)"
        case .keyMissing(let id, let available):
            "it is encrypted with key \(id), which the key file does not hold (it holds \(available.joined(separator: ", "))): add \(id) to the key file, or give the file that holds it"
        case .notAuthentic(let id):
            "it does not authenticate under the key file's key \(id): that key is not the one that sealed it (check the key file), or the frame was altered"
        case .malformedEnvelope(let reason):
            "its encrypted payload is malformed: \(reason)"
        case .cryptoFailure(let reason):
            "encryption failed: \(reason)"
        }
    }
}

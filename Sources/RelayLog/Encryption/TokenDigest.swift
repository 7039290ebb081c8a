import Crypto

/// What the relay keeps of a device's push token where it only compares tokens (the aggregates'
/// distinct tokens, in SQLite and PostgreSQL, and the forwarding store's delivered registrations):
/// the SHA-256 of its UTF-8 bytes, 64 lower-case hex digits.
///
/// A push token is long and random (an APNs token is 32 random bytes, an FCM token some 160
/// characters), so its digest gives nothing back, with or without a key; being unkeyed, it is the
/// same on every relay of a fleet, which counts distinct tokens across relays. An erasure finds a
/// token's rows by its digest.
public enum TokenDigest {
    /// The digest of `token`, in hex.
    public static func hex(_ token: String) -> String {
        hex(Array(token.utf8))
    }

    /// The SHA-256 of `bytes`, in hex.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in SHA256.hash(data: bytes) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

import Crypto
import Foundation

/// A text value encrypted at rest outside the log (a dead letter's event, URL and answer):
/// `sealed:ID:BASE64`, where ID is the key's id and BASE64 encodes a 12-byte random nonce, the
/// AES-256-GCM ciphertext of the text's UTF-8 bytes and the 16-byte tag.
///
/// The key is HKDF-SHA256 of the key ring's key with no salt and info
/// `campaign-relay sealed text v1`; the additional data is the value's `context` (its column's
/// name), so a value moved to another column does not open. Random nonces suit these values: a
/// store seals a few per event given up on, far below the 2³² a key may seal so.
public enum SealedText {
    /// What every sealed value starts with.
    public static let prefix = "sealed:"
    private static let info = Array("campaign-relay sealed text v1".utf8)

    /// Whether `text` is a sealed value (rather than a value stored in the clear).
    public static func isSealed(_ text: String) -> Bool { text.hasPrefix(prefix) }

    /// The key id a sealed value names, or `nil` for a value in the clear.
    public static func keyID(of text: String) -> String? {
        guard isSealed(text) else { return nil }
        return text.dropFirst(prefix.count).split(separator: ":", maxSplits: 1).first.map(String.init)
    }

    /// `text` sealed with the newest key of `keys` for `context`.
    public static func seal(_ text: String, context: String, keys: LogKeyRing) throws(FrameEncryptionError) -> String {
        let key = keys.newest
        do {
            let box = try AES.GCM.seal(Array(text.utf8), using: textKey(key), authenticating: Array(context.utf8))
            guard let combined = box.combined else { throw FrameEncryptionError.cryptoFailure("AES-GCM gave no combined form") }
            return prefix + key.id + ":" + combined.base64EncodedString()
        } catch let error as FrameEncryptionError {
            throw error
        } catch {
            throw .cryptoFailure("AES-GCM seal: \(error)")
        }
    }

    /// The text of `stored`: opened with `keys` when sealed, as it is otherwise.
    ///
    /// - Throws: ``FrameEncryptionError/keyMissing(keyID:available:)`` when the value is sealed with
    ///   a key `keys` lack (or there are none), ``FrameEncryptionError/notAuthentic(keyID:)`` when
    ///   it does not open under it, ``FrameEncryptionError/malformedEnvelope(_:)`` for a sealed
    ///   value that is not `sealed:ID:BASE64`.
    public static func unseal(_ stored: String, context: String, keys: LogKeyRing?) throws(FrameEncryptionError) -> String {
        guard isSealed(stored) else { return stored }
        let parts = stored.dropFirst(prefix.count).split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let combined = Data(base64Encoded: String(parts[1])) else {
            throw .malformedEnvelope("a sealed value is not sealed:ID:BASE64")
        }
        let id = String(parts[0])
        guard let key = keys?.key(id) else { throw .keyMissing(keyID: id, available: keys?.ids ?? []) }
        do {
            let box = try AES.GCM.SealedBox(combined: combined)
            let plain = try AES.GCM.open(box, using: textKey(key), authenticating: Array(context.utf8))
            return String(decoding: plain, as: UTF8.self)
        } catch {
            throw .notAuthentic(keyID: id)
        }
    }

    private static func textKey(_ key: LogKeyRing.Key) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key.key, info: info, outputByteCount: 32)
    }
}

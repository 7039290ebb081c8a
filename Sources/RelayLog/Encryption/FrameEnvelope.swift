import Crypto

/// The stored payload of an encrypted frame (frame flag ``FrameHeader/encryptedFlag``): which key
/// sealed it, the salt of its frame key, and the AES-256-GCM ciphertext of what an unencrypted
/// frame stores (the zlib stream, or the plain event encoding), with its tag.
///
/// ```
/// offset      size  field
/// 0           1     key id length n (1...32)
/// 1           n     key id (ASCII: letters, digits, '-')
/// 1+n         16    salt
/// 17+n        L     ciphertext (L = stored length − n − 33)
/// 17+n+L      16    GCM tag
/// ```
///
/// **Frame key**: HKDF-SHA256 of the key (input key material), with the salt, info
/// `campaign-relay wal frame v1`, 32 bytes out. **Nonce**: the frame's first sequence number,
/// 8 bytes little-endian, then 4 zero bytes. **Additional data**: the frame header's bytes 0..<28
/// (magic to stored length), so neither the sequence numbers, the count nor the codec can be
/// changed without the tag failing. The header's payload CRC covers the whole envelope.
///
/// Why a nonce is never used twice with one frame key: a writer draws a new random salt when it
/// opens the log and after every commit that failed, and within one salt it seals each first
/// sequence number once, in increasing order; the frames a crash or a failed commit left unfinished
/// are sealed again, if at all, under another salt. Two writers (two relays sharing a key file, a
/// copy of a data directory, a disk rolled back in place) draw 128-bit salts independently.
public enum FrameEnvelope {
    /// Bytes of a salt.
    public static let saltSize = 16
    /// Bytes of a GCM tag.
    public static let tagSize = 16
    /// HKDF's info for frame keys.
    static let info = Array("campaign-relay wal frame v1".utf8)

    /// The parts of an envelope.
    struct Parts {
        var keyID: String
        var salt: [UInt8]
        var ciphertext: Range<Int>
        var tag: Range<Int>
    }

    /// Bytes the envelope adds to what it seals, for a key id of `keyIDLength` bytes.
    static func overhead(keyIDLength: Int) -> Int { 1 + keyIDLength + saltSize + tagSize }

    /// The key id an envelope names, or `nil` when the bytes are no envelope.
    public static func keyID(of stored: [UInt8]) -> String? {
        stored.withUnsafeBufferPointer { try? parse($0).get().keyID }
    }

    /// Splits an envelope into its parts.
    static func parse(_ stored: UnsafeBufferPointer<UInt8>) -> Result<Parts, FrameEncryptionError> {
        guard let length = stored.first.map(Int.init), (1...32).contains(length) else {
            return .failure(.malformedEnvelope("key id length \(stored.first.map(String.init) ?? "missing") is not 1 to 32"))
        }
        let saltStart = 1 + length
        let cipherStart = saltStart + saltSize
        guard stored.count >= cipherStart + tagSize else {
            return .failure(.malformedEnvelope("\(stored.count) bytes cannot hold a key id of \(length) bytes, a salt and a tag"))
        }
        let idBytes = UnsafeBufferPointer(rebasing: stored[1..<saltStart])
        let id = String(decoding: idBytes, as: UTF8.self)
        guard LogKeyFile.isValidID(Substring(id)) else { return .failure(.malformedEnvelope("the key id is not \(LogKeyFile.idRule)")) }
        let tagStart = stored.count - tagSize
        return .success(
            Parts(keyID: id, salt: Array(stored[saltStart..<cipherStart]), ciphertext: cipherStart..<tagStart, tag: tagStart..<stored.count))
    }

    /// The frame key of `key` under `salt`.
    static func deriveFrameKey(_ key: SymmetricKey, salt: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key, salt: salt, info: info, outputByteCount: 32)
    }

    /// The nonce of the frame starting at `firstSequence`.
    static func nonce(firstSequence: UInt64) throws(FrameEncryptionError) -> AES.GCM.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        for index in 0..<8 { bytes[index] = UInt8(truncatingIfNeeded: firstSequence >> (8 * UInt64(index))) }
        do {
            return try AES.GCM.Nonce(data: bytes)
        } catch {
            throw .cryptoFailure("nonce: \(error)")
        }
    }

    /// The payload sealed in an envelope (the zlib stream or plain encoding), its frame's header
    /// given (its CRC already checked).
    ///
    /// - Throws: ``FrameEncryptionError/keyMissing(keyID:available:)`` when `keys` lacks the key
    ///   the frame names (or there are no keys), ``FrameEncryptionError/notAuthentic(keyID:)`` when
    ///   the tag fails under it (another key of the same id, or altered bytes), and
    ///   ``FrameEncryptionError/malformedEnvelope(_:)`` for bytes that are no envelope.
    static func open(_ stored: UnsafeBufferPointer<UInt8>, header: FrameHeader, keys: LogKeyRing?) throws(FrameEncryptionError) -> [UInt8] {
        let parts = try parse(stored).get()
        guard let keys, let frameKey = keys.frameKey(keyID: parts.keyID, salt: parts.salt) else {
            throw .keyMissing(keyID: parts.keyID, available: keys?.ids ?? [])
        }
        let nonce = try nonce(firstSequence: header.firstSequence)
        do {
            let box = try AES.GCM.SealedBox(
                nonce: nonce, ciphertext: Array(stored[parts.ciphertext]), tag: Array(stored[parts.tag]))
            let plain = try AES.GCM.open(box, using: frameKey, authenticating: header.authenticatedPrefix())
            return Array(plain)
        } catch {
            throw .notAuthentic(keyID: parts.keyID)
        }
    }
}

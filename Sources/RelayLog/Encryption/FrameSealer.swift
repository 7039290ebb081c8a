import Crypto

/// The writer's side of encryption at rest: seals frame payloads with the newest key under a salt
/// of this writer's (see ``FrameEnvelope`` for the format and the nonce rule).
///
/// The salt is drawn when the sealer is made (the log's opening, or a `wal rekey` of a segment) and
/// drawn again by ``renew()`` after a commit that failed: a commit's frames that never became
/// durable may be sealed again with other events under the same first sequence number, and a
/// fresh salt gives them another frame key, so no nonce is used twice under one.
struct FrameSealer: Sendable {
    /// The key that seals.
    let key: LogKeyRing.Key
    private let keyIDBytes: [UInt8]
    private(set) var salt: [UInt8] = []
    private var frameKey: SymmetricKey

    /// A sealer for `key` with a salt of its own.
    init(key: LogKeyRing.Key) {
        self.key = key
        self.keyIDBytes = Array(key.id.utf8)
        self.frameKey = key.key
        renew()
    }

    /// Draws a new salt (and derives its frame key).
    mutating func renew() {
        var generator = SystemRandomNumberGenerator()
        salt = (0..<FrameEnvelope.saltSize).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        frameKey = FrameEnvelope.deriveFrameKey(key.key, salt: salt)
    }

    /// Bytes an envelope adds to the payload it seals.
    var overhead: Int { FrameEnvelope.overhead(keyIDLength: keyIDBytes.count) }

    /// The envelope of `inner` (the payload an unencrypted frame would store) for the frame whose
    /// header (with its final flags and stored length) starts with `authenticatedPrefix`.
    func seal(_ inner: [UInt8], firstSequence: UInt64, authenticatedPrefix: [UInt8]) throws(FrameEncryptionError) -> [UInt8] {
        let nonce = try FrameEnvelope.nonce(firstSequence: firstSequence)
        let box: AES.GCM.SealedBox
        do {
            box = try AES.GCM.seal(inner, using: frameKey, nonce: nonce, authenticating: authenticatedPrefix)
        } catch {
            throw .cryptoFailure("AES-GCM seal: \(error)")
        }
        var envelope: [UInt8] = []
        envelope.reserveCapacity(inner.count + overhead)
        envelope.append(UInt8(keyIDBytes.count))
        envelope.append(contentsOf: keyIDBytes)
        envelope.append(contentsOf: salt)
        envelope.append(contentsOf: box.ciphertext)
        envelope.append(contentsOf: box.tag)
        return envelope
    }
}

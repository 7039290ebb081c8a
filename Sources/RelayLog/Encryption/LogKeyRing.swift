import Crypto
import NIOConcurrencyHelpers

/// The keys that encrypt the log at rest (`--encryption-key-file`): every key by its id, and the
/// newest one, which seals every new frame.
///
/// Older keys stay in the ring to read the frames they sealed until `wal rekey` has rewritten
/// those under the newest key. A frame names the id of its key, so a reader picks it without trying
/// each one. The ring also remembers the frame keys it derived (see ``FrameEnvelope``): a log has a
/// handful of salts, one per writer start, and a reader meets the same one frame after frame.
public final class LogKeyRing: Sendable, Hashable, CustomStringConvertible {
    /// One key of the ring.
    public struct Key: Sendable {
        /// Its id: 1 to 32 letters, digits or `-`.
        public let id: String
        /// The 32 bytes of the AES-256 key.
        let key: SymmetricKey

        /// A key `id` holding `bytes` (32 of them).
        public init(id: String, bytes: [UInt8]) {
            self.id = id
            self.key = SymmetricKey(data: bytes)
        }
    }

    /// The keys in the order of the file; the last one is the newest.
    public let keys: [Key]
    /// Where the keys were read, for messages (`nil` when built in memory).
    public let source: String?
    private let byID: [String: Key]
    private let frameKeys = NIOLockedValueBox<[FrameKeyID: SymmetricKey]>([:])

    /// Derived frame keys kept, at most (a log rarely has more than a few salts in reach at once).
    private static let frameKeysKept = 256

    private struct FrameKeyID: Hashable {
        var keyID: String
        var salt: [UInt8]
    }

    /// A ring of `keys` (not empty, ids distinct; ``LogKeyFile`` checks a file's), the last the newest.
    public init(keys: [Key], source: String? = nil) {
        precondition(!keys.isEmpty, "a key ring holds at least one key")
        self.keys = keys
        self.source = source
        self.byID = Dictionary(keys.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// The key that seals new frames: the file's last.
    public var newest: Key {
        // `init` refuses an empty list, so there is a last key.
        keys[keys.count - 1]
    }

    /// The ids, in the file's order.
    public var ids: [String] { keys.map(\.id) }

    /// The key `id`, if the ring holds it.
    public func key(_ id: String) -> Key? { byID[id] }

    /// The frame key of key `keyID` under `salt` (HKDF-SHA256, see ``FrameEnvelope``), derived once.
    func frameKey(keyID: String, salt: [UInt8]) -> SymmetricKey? {
        let id = FrameKeyID(keyID: keyID, salt: salt)
        if let known = frameKeys.withLockedValue({ $0[id] }) { return known }
        guard let key = byID[keyID] else { return nil }
        let derived = FrameEnvelope.deriveFrameKey(key.key, salt: salt)
        frameKeys.withLockedValue { cache in
            if cache.count >= Self.frameKeysKept { cache.removeAll(keepingCapacity: true) }
            cache[id] = derived
        }
        return derived
    }

    public var description: String {
        "keys \(ids.joined(separator: ", ")) (newest \(newest.id))" + (source.map { " from \($0)" } ?? "")
    }

    /// Two rings are equal when they hold the same ids with the same bytes, in the same order.
    public static func == (lhs: LogKeyRing, rhs: LogKeyRing) -> Bool {
        guard lhs.keys.count == rhs.keys.count else { return false }
        return zip(lhs.keys, rhs.keys).allSatisfy { left, right in
            left.id == right.id && left.key.withUnsafeBytes { a in right.key.withUnsafeBytes { b in a.elementsEqual(b) } }
        }
    }

    public func hash(into hasher: inout Hasher) {
        // Ids only: the bytes are secret, and equal rings hash alike all the same.
        hasher.combine(ids)
    }
}

import Crypto
import Foundation

/// Short keyed hashes that stand for personal data (a push token, a user key, a device's name or
/// IMEI, an additional parameter's value) wherever the relay shows a registration to a person:
/// `hash:` and 12 hex digits of HMAC-SHA256 under a key of the data directory. The same value
/// gives the same hash, so an operator can tell two registrations apart or find one again, while
/// the value cannot be read back, nor guessed from a list of emails without the key.
///
/// The key is 32 random bytes in `<data-dir>/pseudonym.key` (mode 0600), made the first time.
public struct Pseudonymizer: Sendable {
    /// The key file of a data directory.
    public static func keyPath(dataDirectory: String) -> String { "\(dataDirectory)/pseudonym.key" }

    private let key: SymmetricKey

    /// Hashes under `key` (32 bytes).
    public init(key: [UInt8]) {
        self.key = SymmetricKey(data: key)
    }

    /// `hash:` and the first 12 hex digits of the value's HMAC-SHA256.
    public func pseudonym(_ value: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array(value.utf8), using: key)
        return "hash:" + mac.prefix(6).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// Why the key file cannot be used.
    public struct KeyFileError: Error, Sendable, CustomStringConvertible {
        /// What failed and what to do.
        public var description: String
    }

    /// The pseudonymizer of `dataDirectory`, its key read, or made (random, mode 0600) when the
    /// file does not exist. It reads and writes a file: call it on a thread made for blocking calls.
    ///
    /// - Throws: ``KeyFileError`` when the file cannot be read, written, or is not 32 bytes.
    static func load(dataDirectory: String) throws(KeyFileError) -> Pseudonymizer {
        let path = keyPath(dataDirectory: dataDirectory)
        if let existing = FileManager.default.contents(atPath: path) {
            guard existing.count == 32 else {
                throw KeyFileError(
                    description:
                        "\(path) holds \(existing.count) bytes, not a 32-byte key: move it away (a new key is made; hashes shown before will differ)"
                )
            }
            return Pseudonymizer(key: Array(existing))
        }
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        // Written whole under a name of its own, then linked in place, which fails if another
        // process made the key first: a crash never leaves a short key, and two processes
        // starting at once both end up with the one key.
        let temporary = path + ".\(ProcessInfo.processInfo.processIdentifier).tmp"
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        guard FileManager.default.createFile(atPath: temporary, contents: Data(key), attributes: [.posixPermissions: 0o600]) else {
            throw KeyFileError(description: "cannot write \(temporary): check that the data directory is writable")
        }
        do {
            try FileManager.default.linkItem(atPath: temporary, toPath: path)
        } catch {
            guard let existing = FileManager.default.contents(atPath: path), existing.count == 32 else {
                throw KeyFileError(description: "cannot put the pseudonym key in place at \(path): \(error)")
            }
            return Pseudonymizer(key: Array(existing))
        }
        return Pseudonymizer(key: key)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

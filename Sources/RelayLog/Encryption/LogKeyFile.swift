import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The key file of `--encryption-key-file`: one key per line, `ID:BASE64`.
///
/// ```
/// # keys of the relay's log, newest last
/// 2026-01:Q2FtcGFpZ25SZWxheUtleU9uZS4uLi4uLi4uLi4uLi4=
/// 2026-07:6c8VbGWkFzRkYm3Xq1vO0cYl9mQk2y7Bf0p6u1a9e3U=
/// ```
///
/// ID is 1 to 32 letters, digits or `-`; BASE64 encodes exactly 32 bytes (standard alphabet, with
/// or without padding). `#` starts a comment to the end of the line; blank lines are skipped. The
/// last key is the newest: it seals new frames, the others only open what they sealed. The file must
/// not be readable, writable or executable by its group or others (mode 0600 or 0400), as ssh
/// insists of a private key.
public enum LogKeyFile {
    /// The rules for a key id.
    public static let idRule = "1 to 32 letters, digits or '-'"

    /// Whether `id` is a valid key id.
    public static func isValidID(_ id: Substring) -> Bool {
        (1...32).contains(id.utf8.count)
            && id.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D }
    }

    /// Reads and checks the key file at `path`. It reads a file: call it where blocking is allowed
    /// (a command's start, or a thread made for it).
    ///
    /// - Throws: ``LogKeyFileError`` naming the file, the line and the rule it breaks.
    public static func load(path: String) throws(LogKeyFileError) -> LogKeyRing {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw LogKeyFileError(path: path, line: nil, problem: "cannot be read (\(String(cString: strerror(errno))))")
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw LogKeyFileError(path: path, line: nil, problem: "is not a regular file") }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw LogKeyFileError(
                path: path, line: nil,
                problem: "is open to its group or others (mode \(String(mode, radix: 8))): run chmod 600 \(path), as ssh requires of a private key")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LogKeyFileError(path: path, line: nil, problem: "cannot be read")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw LogKeyFileError(path: path, line: nil, problem: "is not UTF-8 text") }
        return try parse(text, path: path)
    }

    /// The keys of a key file's `text` (`path` only names it in errors).
    ///
    /// - Throws: ``LogKeyFileError`` for a line that is not `ID:BASE64`, an id that breaks
    ///   ``idRule`` or comes twice, a key that is not 32 bytes, or a file without a key.
    public static func parse(_ text: String, path: String) throws(LogKeyFileError) -> LogKeyRing {
        var keys: [LogKeyRing.Key] = []
        var seen: Set<Substring> = []
        // A byte-order mark and CR LF line ends (a file written on Windows) are taken as plain text.
        let lines = (text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text).split(
            omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        for (index, rawLine) in lines.enumerated() {
            let number = index + 1
            let content = rawLine.prefix { $0 != "#" }.trimmingCharacters(in: .whitespaces)
            if content.isEmpty { continue }
            guard let colon = content.firstIndex(of: ":") else {
                throw LogKeyFileError(path: path, line: number, problem: "is not ID:BASE64 (no ':')")
            }
            let id = content[..<colon]
            let encoded = content[content.index(after: colon)...]
            guard isValidID(id) else {
                throw LogKeyFileError(path: path, line: number, problem: "has the key id '\(id)', which is not \(idRule)")
            }
            guard !seen.contains(id) else { throw LogKeyFileError(path: path, line: number, problem: "repeats the key id \(id)") }
            guard let bytes = decodeBase64(encoded) else {
                throw LogKeyFileError(path: path, line: number, problem: "key \(id) is not base64")
            }
            guard bytes.count == 32 else {
                throw LogKeyFileError(
                    path: path, line: number,
                    problem: "key \(id) decodes to \(bytes.count) bytes, not 32 (make one with: head -c 32 /dev/urandom | base64)")
            }
            seen.insert(id)
            keys.append(LogKeyRing.Key(id: String(id), bytes: bytes))
        }
        guard !keys.isEmpty else {
            throw LogKeyFileError(path: path, line: nil, problem: "holds no key (one ID:BASE64 line per key, newest last)")
        }
        return LogKeyRing(keys: keys, source: path)
    }

    /// Standard base64, padding optional.
    private static func decodeBase64(_ text: Substring) -> [UInt8]? {
        var padded = String(text)
        while padded.utf8.count % 4 != 0 { padded += "=" }
        return Data(base64Encoded: padded).map { Array($0) }
    }
}

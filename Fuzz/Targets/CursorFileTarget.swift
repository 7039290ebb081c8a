import RelayLog

/// A consumer's cursor file as found on disk after anything. One that is accepted holds the
/// position and time its bytes say, and its re-encoding reads back the same.
enum CursorFileTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard let cursor = CursorFile.decode(bytes) else { return }
        try require(bytes.count == CursorFile.size, .cursorFile, "a cursor accepted from \(bytes.count) bytes")
        let encoded = cursor.encoded()
        try require(
            encoded[0..<6] == bytes[0..<6] && encoded[8..<24] == bytes[8..<24], .cursorFile,
            "\(cursor) re-encodes to other magic, version, position or time bytes")
        try require(CursorFile.decode(encoded) == cursor, .cursorFile, "\(cursor) does not read back from its own encoding")
    }
}

/// The 28-byte file that stores one consumer's position in the log.
///
/// ```
/// offset size field
///  0     4    magic "CRWC"
///  4     2    format version (1, UInt16 LE)
///  6     2    reserved (0)
///  8     8    position: the sequence number of the next event to consume (UInt64 LE)
/// 16     8    time of the write, nanoseconds since the Unix epoch (Int64 LE)
/// 24     4    CRC-32 of bytes 0..<24 (UInt32 LE)
/// ```
/// Written atomically (temporary file, fdatasync, rename, directory sync), so after a crash a
/// cursor holds either its previous or its new position, never a mix.
public struct CursorFile: Sendable, Hashable {
    /// Bytes in a cursor file.
    public static let size = 28
    /// `"CRWC"`: Campaign Relay WAL Cursor.
    public static let magic: [UInt8] = Array("CRWC".utf8)

    /// The sequence number of the next event the consumer will read: it has consumed all before it.
    public var position: UInt64
    /// When the position was written, in nanoseconds since the Unix epoch.
    public var writtenAtNanoseconds: Int64

    /// Creates a cursor value.
    public init(position: UInt64, writtenAtNanoseconds: Int64) {
        self.position = position
        self.writtenAtNanoseconds = writtenAtNanoseconds
    }

    /// The file's 28 bytes.
    public func encoded() -> [UInt8] {
        var writer = BinaryWriter(capacity: Self.size)
        writer.bytes.append(contentsOf: Self.magic)
        writer.u16(1)
        writer.u16(0)
        writer.u64(position)
        writer.u64(UInt64(bitPattern: writtenAtNanoseconds))
        writer.u32(Zlib.crc32(writer.bytes))
        return writer.bytes
    }

    /// Parses a cursor file; `nil` when the bytes are damaged or not a cursor.
    public static func decode(_ bytes: [UInt8]) -> CursorFile? {
        guard bytes.count == size, Array(bytes[0..<4]) == magic, bytes[4] == 1, bytes[5] == 0 else { return nil }
        return bytes.withUnsafeBufferPointer { buffer -> CursorFile? in
            guard
                Zlib.crc32(UnsafeBufferPointer(rebasing: buffer[0..<24])) == UInt32(buffer[24]) | UInt32(buffer[25]) << 8 | UInt32(buffer[26]) << 16
                    | UInt32(buffer[27]) << 24
            else { return nil }
            var reader = BinaryReader(UnsafeBufferPointer(rebasing: buffer[8..<24]))
            guard let position = try? reader.u64(), let written = try? reader.u64() else { return nil }
            return CursorFile(position: position, writtenAtNanoseconds: Int64(bitPattern: written))
        }
    }
}

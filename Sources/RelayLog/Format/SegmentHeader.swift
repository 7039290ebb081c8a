/// The fixed 32-byte header at the start of every segment file.
///
/// ```
/// offset size field
///  0     4    magic "CRWS"
///  4     2    format version (1, UInt16 LE)
///  6     2    reserved (0)
///  8     8    first sequence number of the segment (UInt64 LE)
/// 16     8    creation time, nanoseconds since the Unix epoch (Int64 LE)
/// 24     4    reserved (0)
/// 28     4    CRC-32 of bytes 0..<28 (UInt32 LE)
/// ```
/// The file name carries the first sequence number too (`00000000000000000001.wal`), so a segment
/// whose header is damaged is still placed correctly and its frames still read.
public struct SegmentHeader: Sendable, Hashable {
    /// Bytes in a segment header; the first frame starts here.
    public static let size = 32
    /// `"CRWS"`: Campaign Relay WAL Segment.
    public static let magic: [UInt8] = Array("CRWS".utf8)
    /// The only format version written and read.
    public static let version: UInt16 = 1

    /// Sequence number of the first event the segment holds (or will hold).
    public var firstSequence: UInt64
    /// When the segment was created, in nanoseconds since the Unix epoch.
    public var createdAtNanoseconds: Int64

    /// Creates a header.
    public init(firstSequence: UInt64, createdAtNanoseconds: Int64) {
        self.firstSequence = firstSequence
        self.createdAtNanoseconds = createdAtNanoseconds
    }

    /// The header's 32 bytes.
    public func encoded() -> [UInt8] {
        var writer = BinaryWriter(capacity: Self.size)
        writer.bytes.append(contentsOf: Self.magic)
        writer.u16(Self.version)
        writer.u16(0)
        writer.u64(firstSequence)
        writer.u64(UInt64(bitPattern: createdAtNanoseconds))
        writer.u32(0)
        writer.u32(Zlib.crc32(writer.bytes))
        return writer.bytes
    }

    /// Parses and checks a header; `nil` when the bytes are not a valid segment header.
    public static func decode(_ bytes: [UInt8]) -> SegmentHeader? {
        guard bytes.count >= size, Array(bytes[0..<4]) == magic else { return nil }
        return bytes.withUnsafeBufferPointer { buffer -> SegmentHeader? in
            var reader = BinaryReader(UnsafeBufferPointer(rebasing: buffer[0..<size]))
            do throws(BinaryReader.Failure) {
                _ = try reader.u32()
                let versionLow = try reader.u8()
                let versionHigh = try reader.u8()
                _ = try reader.u8()
                _ = try reader.u8()
                let first = try reader.u64()
                let created = try reader.u64()
                _ = try reader.u32()
                let crc = try reader.u32()
                guard UInt16(versionLow) | UInt16(versionHigh) << 8 == version,
                    Zlib.crc32(UnsafeBufferPointer(rebasing: buffer[0..<28])) == crc
                else { return nil }
                return SegmentHeader(firstSequence: first, createdAtNanoseconds: Int64(bitPattern: created))
            } catch {
                return nil
            }
        }
    }

    /// The header at the start of an open segment file; `nil` when it is not a valid one.
    static func read(from handle: any FileHandle) throws(FileSystemError) -> SegmentHeader? {
        decode(try handle.read(at: 0, count: size))
    }

    /// The file name of the segment whose first sequence number is `firstSequence`.
    public static func fileName(firstSequence: UInt64) -> String {
        let digits = String(firstSequence)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".wal"
    }

    /// The first sequence number encoded in a segment file name, or `nil` for other files.
    public static func firstSequence(fromFileName name: String) -> UInt64? {
        guard name.hasSuffix(".wal"), name.utf8.count == 24 else { return nil }
        return UInt64(name.dropLast(4))
    }
}

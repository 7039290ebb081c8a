/// The fixed 36-byte header in front of every frame of a segment.
///
/// ```
/// offset size field
///  0     4    magic "CRWF"
///  4     1    format version (1)
///  5     1    codec (0 = stored, 1 = zlib RFC 1950)
///  6     2    flags (UInt16 LE): bit 0 = encrypted (``encryptedFlag``), others 0
///  8     8    first sequence number (UInt64 LE)
/// 16     4    event count (UInt32 LE)
/// 20     4    uncompressed payload length (UInt32 LE)
/// 24     4    stored payload length (UInt32 LE)
/// 28     4    CRC-32 of the stored payload (UInt32 LE)
/// 32     4    CRC-32 of header bytes 0..<32 (UInt32 LE)
/// ```
/// The header has its own CRC so a reader can trust the lengths before it reads the payload, and
/// can find the next frame after damage by looking for a magic whose header CRC matches.
public struct FrameHeader: Sendable, Hashable {
    /// Bytes in a header.
    public static let size = 36
    /// `"CRWF"`: Campaign Relay WAL Frame.
    public static let magic: [UInt8] = Array("CRWF".utf8)
    /// The only format version written and read.
    public static let version: UInt8 = 1
    /// The largest stored payload a reader accepts (a corrupt length must not make it allocate gigabytes).
    public static let maximumPayloadBytes = 64 << 20

    /// How the payload is stored.
    public enum Codec: UInt8, Sendable {
        /// The payload is the event encoding itself.
        case stored = 0
        /// The payload is the event encoding compressed with zlib.
        case zlib = 1
    }

    /// Sequence number of the frame's first event; the others follow without gaps.
    public var firstSequence: UInt64
    /// Events in the frame (at least one).
    public var eventCount: UInt32
    /// Length of the event encoding before compression.
    public var uncompressedLength: UInt32
    /// Length of the payload as stored after the header.
    public var storedLength: UInt32
    /// CRC-32 of the stored payload.
    public var payloadCRC: UInt32
    /// How the payload is stored (inside the envelope, when encrypted).
    public var codec: Codec
    /// Whether the stored payload is an encrypted envelope (``FrameEnvelope``) around what an
    /// unencrypted frame stores.
    public var isEncrypted: Bool

    /// The flags bit of an encrypted frame.
    public static let encryptedFlag: UInt16 = 1

    /// The sequence number after the frame's last event.
    public var endSequence: UInt64 { firstSequence + UInt64(eventCount) }
    /// Header plus payload.
    public var frameSize: Int { Self.size + Int(storedLength) }

    /// Creates a header.
    public init(
        firstSequence: UInt64, eventCount: UInt32, uncompressedLength: UInt32, storedLength: UInt32, payloadCRC: UInt32, codec: Codec,
        isEncrypted: Bool = false
    ) {
        self.isEncrypted = isEncrypted
        self.firstSequence = firstSequence
        self.eventCount = eventCount
        self.uncompressedLength = uncompressedLength
        self.storedLength = storedLength
        self.payloadCRC = payloadCRC
        self.codec = codec
    }

    /// The header's 36 bytes.
    public func encoded() -> [UInt8] {
        var writer = BinaryWriter(capacity: Self.size)
        writer.bytes = authenticatedPrefix()
        writer.u32(payloadCRC)
        writer.u32(Zlib.crc32(writer.bytes))
        return writer.bytes
    }

    /// The header's first 28 bytes (magic to stored length): what an encrypted frame's tag
    /// authenticates besides its payload.
    func authenticatedPrefix() -> [UInt8] {
        var writer = BinaryWriter(capacity: Self.size)
        writer.bytes.append(contentsOf: Self.magic)
        writer.u8(Self.version)
        writer.u8(codec.rawValue)
        writer.u16(isEncrypted ? Self.encryptedFlag : 0)
        writer.u64(firstSequence)
        writer.u32(eventCount)
        writer.u32(uncompressedLength)
        writer.u32(storedLength)
        return writer.bytes
    }

    /// Why 36 bytes are not a valid header.
    public enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// The bytes do not start with `"CRWF"`.
        case badMagic
        /// The header CRC does not match (damaged bytes).
        case headerChecksum
        /// A version or codec this build does not know.
        case unsupported(String)
        /// Lengths or counts that no writer produces.
        case implausible(String)

        public var description: String {
            switch self {
            case .badMagic: "no frame magic"
            case .headerChecksum: "frame header CRC mismatch"
            case .unsupported(let what): "unsupported \(what)"
            case .implausible(let what): "implausible header: \(what)"
            }
        }
    }

    /// Parses and checks a header from the first 36 bytes of `bytes`.
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<FrameHeader, Problem> {
        guard bytes.count >= size else { return .failure(.implausible("fewer than \(size) bytes")) }
        guard bytes[0] == magic[0], bytes[1] == magic[1], bytes[2] == magic[2], bytes[3] == magic[3] else { return .failure(.badMagic) }
        var reader = BinaryReader(UnsafeBufferPointer(rebasing: bytes[0..<size]))
        do throws(BinaryReader.Failure) {
            _ = try reader.u32()
            let version = try reader.u8()
            let codecByte = try reader.u8()
            let flagsLow = try reader.u8()
            let flagsHigh = try reader.u8()
            let first = try reader.u64()
            let count = try reader.u32()
            let uncompressed = try reader.u32()
            let stored = try reader.u32()
            let payloadCRC = try reader.u32()
            let headerCRC = try reader.u32()
            guard Zlib.crc32(UnsafeBufferPointer(rebasing: bytes[0..<32])) == headerCRC else { return .failure(.headerChecksum) }
            guard version == Self.version else { return .failure(.unsupported("frame version \(version)")) }
            guard let codec = Codec(rawValue: codecByte) else { return .failure(.unsupported("codec \(codecByte)")) }
            let flags = UInt16(flagsLow) | UInt16(flagsHigh) << 8
            guard flags & ~Self.encryptedFlag == 0 else { return .failure(.unsupported("flags \(flags)")) }
            guard count > 0, first > 0, first <= UInt64.max - UInt64(count) else {
                return .failure(.implausible("sequence \(first), count \(count)"))
            }
            guard Int(stored) <= maximumPayloadBytes, Int(uncompressed) <= maximumPayloadBytes else {
                return .failure(.implausible("payload of \(stored) bytes"))
            }
            return .success(
                FrameHeader(
                    firstSequence: first, eventCount: count, uncompressedLength: uncompressed, storedLength: stored,
                    payloadCRC: payloadCRC, codec: codec, isEncrypted: flags & Self.encryptedFlag != 0
                )
            )
        } catch {
            return .failure(.implausible(error.reason))
        }
    }
}

public import RelayCore
import RelayLog

/// The body of a `POST /v1/relay/batches`: events of one relay's log with their sequence numbers,
/// compressed. Specified in `docs/relay-protocol.md`.
///
/// Layout (little-endian): magic `CRWB`, version 1, codec (0 stored, 1 zlib), 2 reserved bytes, the
/// length of the plain bytes (u32), then the plain bytes, stored or zlib-compressed: the event count
/// (varint), each event's sequence number as a varint delta (the first from the batch's first
/// sequence, each next one from the previous one plus 1), then the events as a write-ahead-log frame
/// payload holds them.
public enum RelayBatchBody {
    /// Why a body was refused.
    public struct Malformed: Error, Sendable, CustomStringConvertible {
        /// What is wrong, and where.
        public var description: String
    }

    static let magic: [UInt8] = Array("CRWB".utf8)
    /// Plain bytes above this are refused (a batch is meant to be a few megabytes at most).
    public static let maximumPlainBytes = 64 << 20
    /// Events above this are refused, so that one batch always fits the log's queue.
    public static let maximumEvents = 1_000_000

    /// The body for `events` of the range starting at `first` (their sequence numbers ascending,
    /// none below `first`).
    public static func encode(_ events: [SequencedEvent], first: UInt64, compressionLevel: Int32 = 6) -> [UInt8] {
        var plain = BinaryWriter(capacity: events.count * 24)
        plain.varint(UInt64(events.count))
        var next = first
        for event in events {
            plain.varint(event.sequence - next)
            next = event.sequence + 1
        }
        plain.bytes += EventBinaryCodec.encode(events.map(\.event))
        var body = BinaryWriter(capacity: plain.bytes.count / 4 + 12)
        body.bytes += magic
        body.u8(1)
        let compressed = compressionLevel > 0 ? Zlib.compress(plain.bytes, level: compressionLevel) : nil
        body.u8(compressed == nil ? 0 : 1)
        body.u16(0)
        body.u32(UInt32(plain.bytes.count))
        body.bytes += compressed ?? plain.bytes
        return body.bytes
    }

    /// The events of `body`, whose sequence numbers must lie in `sequences`.
    ///
    /// - Throws: ``Malformed`` naming the byte and the rule.
    public static func decode(_ body: [UInt8], sequences: Range<UInt64>) throws(Malformed) -> [SequencedEvent] {
        guard body.count >= 12, Array(body[0..<4]) == magic else { throw Malformed(description: "the body does not start with CRWB") }
        guard body[4] == 1 else { throw Malformed(description: "body version \(body[4]) is not 1") }
        let plainCount = Int(UInt32(body[8]) | UInt32(body[9]) << 8 | UInt32(body[10]) << 16 | UInt32(body[11]) << 24)
        guard plainCount <= maximumPlainBytes else {
            throw Malformed(description: "the plain body (\(plainCount) bytes) is over \(maximumPlainBytes)")
        }
        let plain: [UInt8]
        switch body[5] {
        case 0:
            plain = Array(body[12...])
        case 1:
            guard let inflated = body[12...].withUnsafeBufferPointer({ Zlib.decompress($0, expectedCount: plainCount) }) else {
                throw Malformed(description: "the zlib data does not inflate to \(plainCount) bytes")
            }
            plain = inflated
        case let codec:
            throw Malformed(description: "codec \(codec) is neither 0 (stored) nor 1 (zlib)")
        }
        guard plain.count == plainCount else { throw Malformed(description: "the plain body is \(plain.count) bytes, not \(plainCount)") }
        let result: Result<[SequencedEvent], Malformed> = plain.withUnsafeBufferPointer { buffer in
            var reader = BinaryReader(buffer)
            do throws(BinaryReader.Failure) {
                let count = try reader.varint()
                guard count <= UInt64(maximumEvents) else { throw reader.failure("\(count) events; a batch holds at most \(maximumEvents)") }
                guard count <= UInt64(plainCount) else { throw reader.failure("an event count of \(count)") }
                var sequencesOfEvents: [UInt64] = []
                sequencesOfEvents.reserveCapacity(Int(count))
                var next = sequences.lowerBound
                for _ in 0..<count {
                    let (sequence, overflow) = next.addingReportingOverflow(try reader.varint())
                    guard !overflow, sequence < sequences.upperBound else {
                        throw reader.failure("an event outside the batch's sequences \(sequences.lowerBound)-\(sequences.upperBound)")
                    }
                    sequencesOfEvents.append(sequence)
                    next = sequence + 1
                }
                let payload = UnsafeBufferPointer(rebasing: buffer[reader.offset...])
                let events: [Event]
                do {
                    events = try EventBinaryCodec.decode(payload, count: Int(count))
                } catch {
                    return .failure(Malformed(description: "events: \(error)"))
                }
                return .success(zip(sequencesOfEvents, events).map { SequencedEvent(sequence: $0, event: $1) })
            } catch {
                return .failure(Malformed(description: "plain body byte \(error.offset): \(error.reason)"))
            }
        }
        return try result.get()
    }
}

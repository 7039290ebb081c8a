import RelayCore
import RelayLog

/// The binary event codec of log frames and relay batches. The first four bytes are the event
/// count (as a frame header gives it, little-endian), the rest the payload. Events it decodes
/// encode and decode to the same events.
enum EventCodecTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard bytes.count >= 4 else { return }
        let count = Int(UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24)
        guard let events = try? EventBinaryCodec.decode(Array(bytes[4...]), count: count) else { return }
        try require(events.count == count, .eventCodec, "\(events.count) events decoded for a count of \(count)")
        let encoded = EventBinaryCodec.encode(events)
        let again: [Event]
        do {
            again = try EventBinaryCodec.decode(encoded, count: events.count)
        } catch {
            throw FuzzFinding(.eventCodec, "the encoding of decoded events does not decode: \(error)")
        }
        try require(again == events, .eventCodec, "decoded \(events), re-encoded and decoded \(again)")
    }
}

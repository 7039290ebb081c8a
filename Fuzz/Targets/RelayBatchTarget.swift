import RelayChain
import RelayCore

/// A relay-to-relay batch body (`POST /v1/relay/batches`). The first eight bytes are the first
/// sequence of the range it was sent for and the next two its length, the rest the body. Events it
/// decodes lie in that range, ascend, and re-encode to the same events.
enum RelayBatchTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard bytes.count >= 10 else { return }
        var first: UInt64 = 0
        for index in 0..<8 { first |= UInt64(bytes[index]) << (8 * index) }
        let length = UInt64(bytes[8]) | UInt64(bytes[9]) << 8
        let (end, overflow) = first.addingReportingOverflow(length)
        guard !overflow else { return }
        let sequences = first..<end
        guard let events = try? RelayBatchBody.decode(Array(bytes[10...]), sequences: sequences) else { return }
        for (index, event) in events.enumerated() {
            try require(sequences.contains(event.sequence), .relayBatch, "sequence \(event.sequence) outside \(sequences)")
            if index > 0 {
                try require(
                    event.sequence > events[index - 1].sequence, .relayBatch, "sequence \(event.sequence) after \(events[index - 1].sequence)")
            }
        }
        let encoded = RelayBatchBody.encode(events, first: first)
        let again: [SequencedEvent]
        do {
            again = try RelayBatchBody.decode(encoded, sequences: sequences)
        } catch {
            throw FuzzFinding(.relayBatch, "the encoding of decoded events is refused: \(error)")
        }
        try require(again == events, .relayBatch, "decoded \(events.count) events, re-encoded and decoded others")
    }
}

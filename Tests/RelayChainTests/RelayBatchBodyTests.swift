import RelayChain
import RelayCore
import TestTiers
import Testing

/// The batch body of docs/relay-protocol.md, both ways, and what it refuses.
@Suite("Relay batch body", .tier(.fast))
struct RelayBatchBodyTests {
    static func hits(_ sequences: [UInt64]) -> [SequencedEvent] {
        sequences.map { sequence in
            SequencedEvent(
                sequence: sequence,
                event: .tracking(
                    TrackingEvent(
                        action: .impression, messageId: MessageID(decimal: Int64(sequence)), deliveryId: "d",
                        time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000 + Int64(sequence)))))
        }
    }

    @Test("events and their sequence numbers come back as sent, stored or compressed, gaps in the range included", arguments: [Int32(0), 6])
    func roundTrip(level: Int32) throws {
        var events = Self.hits([100, 101, 105, 190])
        // A tenant's events travel with their tenant (tag 7), beside the default tenant's.
        events[1].event.tenant = try TenantName(validating: "brand-a")
        events[3].event.tenant = try TenantName(validating: "brand-b")
        let body = RelayBatchBody.encode(events, first: 100, compressionLevel: level)
        #expect(Array(body[0..<4]) == Array("CRWB".utf8))
        #expect(body[5] == (level > 0 ? 1 : 0))
        #expect(try RelayBatchBody.decode(body, sequences: 100..<200) == events)
        #expect(try RelayBatchBody.decode(RelayBatchBody.encode([], first: 7), sequences: 7..<9).isEmpty)
    }

    @Test("a body that is not a batch, or whose events fall outside the range, is refused with the reason")
    func refusals() throws {
        let body = RelayBatchBody.encode(Self.hits([100, 150]), first: 100)
        let outside = try #require(throws: RelayBatchBody.Malformed.self) { try RelayBatchBody.decode(body, sequences: 100..<150) }
        #expect(outside.description.contains("an event outside the batch's sequences 100-150"), "\(outside)")
        let notBatch = try #require(throws: RelayBatchBody.Malformed.self) { try RelayBatchBody.decode(Array("{}".utf8), sequences: 1..<2) }
        #expect(notBatch.description == "the body does not start with CRWB")
        var badCodec = body
        badCodec[5] = 7
        let codec = try #require(throws: RelayBatchBody.Malformed.self) { try RelayBatchBody.decode(badCodec, sequences: 100..<200) }
        #expect(codec.description == "codec 7 is neither 0 (stored) nor 1 (zlib)")
        var truncated = body
        truncated.removeLast(3)
        #expect(throws: RelayBatchBody.Malformed.self) { try RelayBatchBody.decode(truncated, sequences: 100..<200) }
        // A count over the limit, in a stored body: refused before anything is decoded.
        let plain: [UInt8] = [0x81, 0x89, 0x7A]  // varint 2,000,001
        let huge = Array("CRWB".utf8) + [1, 0, 0, 0, UInt8(plain.count), 0, 0, 0] + plain
        let tooMany = try #require(throws: RelayBatchBody.Malformed.self) { try RelayBatchBody.decode(huge, sequences: 1..<2) }
        #expect(tooMany.description.contains("a batch holds at most 1000000"), "\(tooMany)")
    }
}

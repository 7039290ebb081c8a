import TestTiers
import Testing

@testable import RelayAggregator

/// The stored form of a delivery action's distinct integer message ids (docs/aggregates.md).
@Suite("MessageChunk: distinct ids as arrays and bitmaps", .tier(.fast))
struct MessageChunkTests {
    @Test("inserting counts only ids not yet present, and the array is stored as 2-byte little-endian values")
    func arrayInsert() throws {
        var chunk = MessageChunk()
        #expect(chunk.insert(ascending: [5, 600, 1200]) == 3)
        #expect(chunk.insert(ascending: [4, 5, 1200, 65535]) == 2)
        #expect(chunk.count == 5)
        #expect(chunk.encoded == [4, 0, 5, 0, 0x58, 0x02, 0xB0, 0x04, 0xFF, 0xFF])
        #expect(try MessageChunk(encoded: chunk.encoded) == chunk)
        #expect(chunk.contains(600) && !chunk.contains(601))
    }

    @Test("past 4,095 members a chunk becomes an 8,192-byte bitmap, and keeps counting exactly")
    func becomesBitmap() throws {
        var chunk = MessageChunk()
        let evens = stride(from: UInt16(0), to: 8190, by: 2).map { $0 }
        #expect(chunk.insert(ascending: evens) == 4_095)
        #expect(chunk.encoded.count == 8_190, "4,095 members are still an array")
        #expect(chunk.insert(ascending: [1, 2, 3]) == 2)
        #expect(chunk.count == 4_097)
        let stored = chunk.encoded
        #expect(stored.count == 8_192)
        // Bit `low % 8` of byte `low / 8`: 0, 1, 2 and 3 are members, so are 4 and 6.
        #expect(stored[0] == 0b0101_1111)
        let read = try MessageChunk(encoded: stored)
        #expect(read == chunk)
        var again = read
        #expect(again.insert(ascending: [0, 1, 8191, 65535]) == 2)
        #expect(again.count == 4_099)
        #expect(again.contains(65535) && again.contains(8191) && !again.contains(8193))
    }

    @Test("ids split into chunks by their upper 48 bits, negative ones too")
    func chunkKeys() {
        #expect(MessageChunk.chunkKey(of: 1_000_065_536) == 15_259)
        #expect(MessageChunk.low(of: 1_000_065_536) == 51_712)
        #expect(MessageChunk.chunkKey(of: -1) == 0xFFFF_FFFF_FFFF)
        #expect(MessageChunk.low(of: -1) == 0xFFFF)
        #expect(MessageChunk.chunkKey(of: Int64.min) == 0x8000_0000_0000)
    }

    @Test(
        "damaged chunks are refused, naming what is wrong",
        arguments: [
            ([UInt8](repeating: 0, count: 3), "3 bytes"),
            ([5, 0, 5, 0], "does not follow"),
            ([9, 0, 4, 0], "does not follow"),
            ([UInt8](repeating: 0, count: 8_192), "a bitmap of 0 members"),
            ([UInt8](repeating: 0, count: 8_194), "8194 bytes"),
        ])
    func damage(bytes: [UInt8], reason: String) {
        #expect {
            try MessageChunk(encoded: bytes)
        } throws: { error in
            (error as? MessageChunkDamage)?.reason.contains(reason) == true
        }
    }
}

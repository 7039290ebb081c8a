/// The distinct integer message ids of one delivery action that share their upper 48 bits: one row
/// of `delivery_message_chunks` (docs/aggregates.md), the roaring bitmap's idea.
///
/// A chunk holds the low 16 bits of its members, in one of two encodings chosen by how many there
/// are, so that it never costs more than 2 bytes a member and a full one costs 1 bit a member:
/// - up to ``largestArray`` members: their low 16 bits, ascending, 2 bytes each, little-endian;
/// - more: a bitmap of exactly ``bitmapBytes`` bytes, bit `low % 8` of byte `low / 8` set for each
///   member (1,024 little-endian 64-bit words, bit `low % 64` of word `low / 64`).
///
/// The length tells them apart: an array is at most 8,190 bytes, a bitmap exactly 8,192.
struct MessageChunk: Equatable {
    /// The most members kept as an array; one more and the chunk becomes a bitmap (an array of 4,096
    /// would take the bitmap's 8,192 bytes, and be mistaken for one).
    static let largestArray = 4_095
    /// The size of a chunk kept as a bitmap: one bit for each of 65,536 low values.
    static let bitmapBytes = 8_192

    private enum Members: Equatable {
        case array([UInt16])
        case bitmap([UInt64])
    }

    private var members: Members
    /// How many distinct ids the chunk holds.
    private(set) var count: Int

    /// The chunk that `id` belongs to: its upper 48 bits, as the table stores them.
    static func chunkKey(of id: Int64) -> Int64 { Int64(bitPattern: UInt64(bitPattern: id) >> 16) }

    /// Where `id` sits in its chunk: its low 16 bits.
    static func low(of id: Int64) -> UInt16 { UInt16(truncatingIfNeeded: id) }

    /// An empty chunk.
    init() {
        members = .array([])
        count = 0
    }

    /// Reads a chunk as stored.
    ///
    /// - Throws: ``MessageChunkDamage`` when `encoded` is neither a bitmap nor an array of
    ///   strictly ascending values (the database was damaged or written by something else).
    init(encoded: [UInt8]) throws(MessageChunkDamage) {
        if encoded.count == Self.bitmapBytes {
            var words = [UInt64](repeating: 0, count: Self.bitmapBytes / 8)
            var total = 0
            for index in words.indices {
                var word: UInt64 = 0
                for byte in 0..<8 { word |= UInt64(encoded[index * 8 + byte]) << (8 * UInt64(byte)) }
                words[index] = word
                total += word.nonzeroBitCount
            }
            guard total > Self.largestArray else {
                throw MessageChunkDamage(reason: "a bitmap of \(total) members, which an array of at most \(Self.largestArray) holds")
            }
            members = .bitmap(words)
            count = total
            return
        }
        guard encoded.count % 2 == 0, encoded.count <= Self.largestArray * 2 else {
            throw MessageChunkDamage(reason: "\(encoded.count) bytes: neither a bitmap of \(Self.bitmapBytes) bytes nor an array of 2-byte values")
        }
        var values: [UInt16] = []
        values.reserveCapacity(encoded.count / 2)
        for index in stride(from: 0, to: encoded.count, by: 2) {
            let value = UInt16(encoded[index]) | UInt16(encoded[index + 1]) << 8
            if let last = values.last, value <= last {
                throw MessageChunkDamage(reason: "array value \(value) at byte \(index) does not follow \(last)")
            }
            values.append(value)
        }
        members = .array(values)
        count = values.count
    }

    /// The chunk as stored.
    var encoded: [UInt8] {
        switch members {
        case .array(let values):
            var bytes = [UInt8]()
            bytes.reserveCapacity(values.count * 2)
            for value in values {
                bytes.append(UInt8(truncatingIfNeeded: value))
                bytes.append(UInt8(truncatingIfNeeded: value >> 8))
            }
            return bytes
        case .bitmap(let words):
            var bytes = [UInt8]()
            bytes.reserveCapacity(Self.bitmapBytes)
            for word in words {
                for byte in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: word >> (8 * UInt64(byte)))) }
            }
            return bytes
        }
    }

    /// Whether `low` is a member.
    func contains(_ low: UInt16) -> Bool {
        switch members {
        case .array(let values): values.binarySearch(low) != nil
        case .bitmap(let words): words[Int(low >> 6)] & (1 << UInt64(low & 63)) != 0
        }
    }

    /// Adds `lows` (ascending, without repeats) and returns how many of them were not members yet:
    /// the uniques they add.
    mutating func insert(ascending lows: some Collection<UInt16>) -> Int {
        guard !lows.isEmpty else { return 0 }
        let before = count
        switch members {
        case .bitmap(var words):
            members = .array([])  // drops the reference so the words are changed in place
            for low in lows { Self.set(low, in: &words) }
            members = .bitmap(words)
            count = words.reduce(0) { $0 + $1.nonzeroBitCount }
        case .array(let values):
            let merged = Self.merge(values, lows)
            if merged.count > Self.largestArray {
                var words = [UInt64](repeating: 0, count: Self.bitmapBytes / 8)
                for low in merged { Self.set(low, in: &words) }
                members = .bitmap(words)
            } else {
                members = .array(merged)
            }
            count = merged.count
        }
        return count - before
    }

    private static func set(_ low: UInt16, in words: inout [UInt64]) {
        words[Int(low >> 6)] |= 1 << UInt64(low & 63)
    }

    /// The union of two ascending sequences without repeats, ascending.
    private static func merge(_ left: [UInt16], _ right: some Collection<UInt16>) -> [UInt16] {
        var merged: [UInt16] = []
        merged.reserveCapacity(left.count + right.count)
        var leftIndex = left.startIndex
        var rightIndex = right.startIndex
        while leftIndex < left.endIndex, rightIndex < right.endIndex {
            let (a, b) = (left[leftIndex], right[rightIndex])
            if a < b {
                merged.append(a)
                leftIndex += 1
            } else if b < a {
                merged.append(b)
                right.formIndex(after: &rightIndex)
            } else {
                merged.append(a)
                leftIndex += 1
                right.formIndex(after: &rightIndex)
            }
        }
        merged.append(contentsOf: left[leftIndex...])
        merged.append(contentsOf: right[rightIndex...])
        return merged
    }
}

/// Why a stored ``MessageChunk`` could not be read.
struct MessageChunkDamage: Error, Equatable {
    /// What is wrong with the bytes.
    var reason: String
}

extension [UInt16] {
    /// The index of `value` in this ascending array, or `nil`.
    fileprivate func binarySearch(_ value: UInt16) -> Int? {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if self[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < count && self[low] == value ? low : nil
    }
}

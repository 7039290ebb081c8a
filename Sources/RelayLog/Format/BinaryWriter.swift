/// Appends little-endian integers, LEB128 varints and length-prefixed strings to a byte array.
package struct BinaryWriter {
    package var bytes: [UInt8]

    package init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    package mutating func u8(_ value: UInt8) { bytes.append(value) }

    package mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    package mutating func u32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    package mutating func u64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// Unsigned LEB128: seven bits per byte, low bits first, high bit set on all but the last byte.
    package mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// Zigzag (0, -1, 1, -2, … → 0, 1, 2, 3, …) then LEB128.
    package mutating func signedVarint(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    package mutating func string(_ text: String) {
        var copy = text
        copy.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// `0` for `nil`, else the length plus one, then the bytes.
    package mutating func optionalString(_ text: String?) {
        guard var copy = text else {
            bytes.append(0)
            return
        }
        copy.withUTF8 { utf8 in
            varint(UInt64(utf8.count) + 1)
            bytes.append(contentsOf: utf8)
        }
    }
}

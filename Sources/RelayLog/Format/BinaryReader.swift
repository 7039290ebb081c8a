import RelayCore

/// Reads what ``BinaryWriter`` wrote, refusing to read past the end.
package struct BinaryReader {
    /// Why a decode stopped: the bytes end early or hold a value the format does not allow.
    package struct Failure: Error {
        package var offset: Int
        package var reason: String
    }

    let bytes: UnsafeBufferPointer<UInt8>
    package private(set) var offset = 0

    package init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    package var isAtEnd: Bool { offset >= bytes.count }

    package func failure(_ reason: String) -> Failure { Failure(offset: offset, reason: reason) }

    package mutating func u8() throws(Failure) -> UInt8 {
        guard offset < bytes.count else { throw failure("unexpected end of data") }
        defer { offset += 1 }
        return bytes[offset]
    }

    package mutating func u32() throws(Failure) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw failure("unexpected end of data") }
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << UInt32(8 * index) }
        offset += 4
        return value
    }

    package mutating func u64() throws(Failure) -> UInt64 {
        guard offset + 8 <= bytes.count else { throw failure("unexpected end of data") }
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << UInt64(8 * index) }
        offset += 8
        return value
    }

    package mutating func varint() throws(Failure) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < bytes.count else { throw failure("unexpected end of data in a varint") }
            let byte = bytes[offset]
            offset += 1
            guard shift < 64, shift != 63 || byte <= 1 else { throw failure("varint longer than 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }

    package mutating func signedVarint() throws(Failure) -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    package mutating func length() throws(Failure) -> Int {
        let raw = try varint()
        guard raw <= UInt64(bytes.count - offset) else { throw failure("length \(raw) runs past the end of the data") }
        return Int(raw)
    }

    package mutating func string() throws(Failure) -> String {
        let count = try length()
        return try text(count)
    }

    package mutating func optionalString() throws(Failure) -> String? {
        let raw = try varint()
        if raw == 0 { return nil }
        guard raw - 1 <= UInt64(bytes.count - offset) else { throw failure("length \(raw - 1) runs past the end of the data") }
        return try text(Int(raw - 1))
    }

    private mutating func text(_ count: Int) throws(Failure) -> String {
        let slice = UnsafeBufferPointer(rebasing: bytes[offset..<(offset + count)])
        guard let text = UTF8Text.string(slice) else { throw failure("a string is not valid UTF-8") }
        offset += count
        return text
    }
}

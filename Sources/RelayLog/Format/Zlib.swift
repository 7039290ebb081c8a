import CZlib

/// One-shot zlib (RFC 1950) compression of frame payloads, and CRC-32 of frames.
///
/// The zlib container (not raw deflate) is used so that any language's `zlib.decompress` reads a
/// payload as it is.
package enum Zlib {
    /// Compresses `input` at `level` (1 = fastest … 9 = smallest).
    package static func compress(_ input: [UInt8], level: Int32) -> [UInt8]? {
        var capacity = compressBound(uLong(input.count))
        var output = [UInt8](repeating: 0, count: Int(capacity))
        let status = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { source in
                compress2(out.baseAddress, &capacity, source.baseAddress, uLong(source.count), level)
            }
        }
        guard status == Z_OK else { return nil }
        output.removeSubrange(Int(capacity)...)
        return output
    }

    /// Decompresses `input`, which must inflate to exactly `expectedCount` bytes.
    package static func decompress(_ input: UnsafeBufferPointer<UInt8>, expectedCount: Int) -> [UInt8]? {
        var produced = uLong(expectedCount)
        var output = [UInt8](repeating: 0, count: max(expectedCount, 1))
        let status = output.withUnsafeMutableBufferPointer { out in
            uncompress(out.baseAddress, &produced, input.baseAddress, uLong(input.count))
        }
        guard status == Z_OK, produced == uLong(expectedCount) else { return nil }
        if expectedCount == 0 { return [] }
        return output
    }

    /// CRC-32 (the zlib / IEEE 802.3 polynomial) of `bytes`, continuing from `crc`.
    static func crc32(_ bytes: UnsafeBufferPointer<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return crc }
        return UInt32(CZlib.crc32(uLong(crc), base, uInt(bytes.count)))
    }

    /// CRC-32 of an array.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBufferPointer { crc32($0) }
    }
}

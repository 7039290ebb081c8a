/// Strings from UTF-8 bytes that must be valid, on the hot paths that read them (the JSON parser,
/// the log's event decoder).
package enum UTF8Text {
    /// The string `bytes` hold, or `nil` when they are not valid UTF-8.
    @inlinable
    package static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var isASCII = true
        for byte in bytes where byte >= 0x80 {
            isASCII = false
            break
        }
        return string(bytes, isASCII: isASCII)
    }

    /// The string `bytes` hold, or `nil` when they are not valid UTF-8, for a caller that has
    /// already seen whether every byte is ASCII (the JSON parser, while it looks for the closing
    /// quote).
    ///
    /// ASCII, which nearly every identifier and token is, is valid as it is and is decoded without
    /// the standard library's validating initializer: `String(validating:as:)` instantiates generic
    /// metadata on every call, which was 13 % of `serve`'s CPU under batch ingest.
    @inlinable
    package static func string(_ bytes: UnsafeBufferPointer<UInt8>, isASCII: Bool) -> String? {
        isASCII ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
    }
}

/// The percent-encoding the Campaign SDKs apply to every form value.
///
/// Only `A-Z a-z 0-9 - . _ ~` are kept; every other byte of the UTF-8 encoding becomes `%XX` with
/// upper-case hex (a space is `%20`, never `+`).
public enum FormEncoding {
    private static let hex = Array("0123456789ABCDEF".utf8)

    /// `text` percent-encoded.
    public static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `name=value&…` with every value encoded, in the order given.
    public static func body(_ fields: [(name: String, value: String)]) -> String {
        fields.map { "\($0.name)=\(encode($0.value))" }.joined(separator: "&")
    }

    /// A pair of a form body that is not valid percent-encoded UTF-8.
    public struct MalformedPair: Error, Sendable, Hashable {
        /// Its 1-based position among the body's non-empty pairs.
        public var index: Int
        /// The pair as it is in the body.
        public var text: String
    }

    /// The fields of a form body, in order, read as a server must accept them: pairs split at `&`
    /// (empty ones skipped), each at its first `=` (a pair without one is a name with an empty
    /// value), both sides decoded with ``decode(_:)``. A name given twice appears twice.
    ///
    /// - Throws: ``MalformedPair`` for the first pair with a malformed escape or non-UTF-8 bytes.
    public static func fields(_ body: String) throws(MalformedPair) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        for (offset, pair) in body.split(separator: "&", omittingEmptySubsequences: true).enumerated() {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count == 2 ? parts[1] : "") else {
                throw MalformedPair(index: offset + 1, text: String(pair))
            }
            fields.append((name, value))
        }
        return fields
    }

    /// Decodes a form value as a server must accept it: `%XX` and `+` for a space.
    ///
    /// Returns `nil` for a malformed escape or bytes that are not UTF-8.
    public static func decode(_ text: Substring) -> String? {
        var out: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): out.append(0x20)
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                out.append(high << 4 | low)
            default: out.append(byte)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

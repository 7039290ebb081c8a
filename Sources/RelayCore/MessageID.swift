/// The Campaign message (broadlog) identifier of a tracking event, as given (`messageId` / `_mId`).
///
/// Three forms are accepted, and the relay refuses anything else at ingest:
/// - a UUID (`8-4-4-4-12` hex digits, any case), sent upstream unchanged;
/// - a decimal integer in the 64-bit range, with an optional sign (as Java's `Long.parseLong`
///   reads it), sent as lowercase hex: of its 64-bit value when it is
///   not negative, of its low 32 bits when it is a negative 32-bit number (the Android SDK rule);
/// - `h` followed by 1 to 16 hex digits, any case: the id as it arrived on the wire in
///   `GET /r/?id=h…` (an SDK already converted it), sent upstream exactly as received, leading
///   zeros, case and the sign-extended form of Android SDK 3.1.1–3.1.3 included.
///
/// The text is kept exactly as given (a decimal stays decimal); `wireForm` (in CampaignProtocol)
/// derives what goes on the wire, and ``identity`` what Campaign counts as one message (`h05` ≡ `5`,
/// `hffffffff9a1c61c0` ≡ `-1709416000`).
public struct MessageID: Sendable, Hashable, CustomStringConvertible {
    /// Which of the three accepted forms the identifier has.
    public enum Form: Sendable, Hashable {
        /// A decimal integer and its value.
        case decimal(Int64)
        /// A UUID: its 16 bytes and whether its hex digits are all upper case.
        case uuid(UUIDBytes, uppercase: Bool?)
        /// The wire form of a hit as received (`h` and hex digits) and the value of its digits.
        case hex(UInt64)
    }

    /// What Campaign counts as one message: two ids with the same identity are the same message.
    public enum Identity: Sendable, Hashable {
        /// A numeric id: the value whose lowercase hex goes on the wire (negative 32-bit decimals
        /// and their sign-extended hex by their low 32 bits, as unsigned).
        case integer(Int64)
        /// A UUID, in lower case.
        case uuid(String)
    }

    /// The sixteen bytes of a UUID, in textual order.
    public typealias UUIDBytes = (UInt64, UInt64)

    /// The identifier exactly as it was given.
    public let text: String
    /// The accepted form the text has.
    public let form: Form

    /// Validates `text` against the Campaign rules.
    ///
    /// - Throws: ``EventInputError`` naming `field` when the text is neither a UUID nor a decimal
    ///   integer, or is a decimal integer outside the 64-bit range.
    public init(_ text: String, field: String = "messageId") throws(EventInputError) {
        var copy = text
        switch copy.withUTF8({ Self.form(of: $0) }) {
        case .some(.some(let form)):
            self.text = text
            self.form = form
        case .some(.none):
            throw EventInputError(field: field, "\(field) \(text.quotedForMessage) is a decimal integer outside the 64-bit range")
        case .none:
            let detail = text.isEmpty ? "\(field) is empty" : "\(field) \(text.quotedForMessage) is neither a UUID nor a decimal integer"
            throw EventInputError(field: field, detail)
        }
    }

    /// The identifier whose UTF-8 text `bytes` hold, or `nil` when ``init(_:field:)`` would refuse
    /// it: for a decoder that reads bytes and leaves the words of a refusal to another path.
    package init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard case .some(.some(let form)) = Self.form(of: bytes) else { return nil }
        self.init(uncheckedText: String(decoding: bytes, as: UTF8.self), form: form)
    }

    /// The form of the text `bytes` hold: `nil` when it has none, `.some(nil)` when it is a
    /// decimal integer outside the 64-bit range.
    private static func form(of bytes: UnsafeBufferPointer<UInt8>) -> Form?? {
        if let value = parseWireHex(bytes) { return .hex(value) }
        if let form = parseUUID(bytes) { return form }
        switch parseDecimal(bytes) {
        case .some(.some(let value)): return .decimal(value)
        case .some(.none): return .some(nil)
        case .none: return nil
        }
    }

    /// Creates an identifier from a decoded value whose form is already known (used by the log decoder).
    package init(uncheckedText text: String, form: Form) {
        self.text = text
        self.form = form
    }

    /// Creates a decimal identifier whose text is the canonical decimal of `value`.
    public init(decimal value: Int64) {
        self.init(uncheckedText: String(value), form: .decimal(value))
    }

    public var description: String { text }

    /// What Campaign counts as one message (see ``Identity``).
    public var identity: Identity {
        switch form {
        case .uuid:
            return .uuid(text.lowercased())
        case .decimal(let value):
            if value < 0, value >= Int64(Int32.min) { return .integer(Int64(UInt32(truncatingIfNeeded: value))) }
            return .integer(value)
        case .hex(let value):
            // 0xffffffff80000000 and above: a negative 32-bit number sign-extended to 64 bits.
            if value >= 0xFFFF_FFFF_8000_0000 { return .integer(Int64(UInt32(truncatingIfNeeded: value))) }
            return .integer(Int64(bitPattern: value))
        }
    }

    public static func == (lhs: MessageID, rhs: MessageID) -> Bool { lhs.text == rhs.text }
    public func hash(into hasher: inout Hasher) { hasher.combine(text) }

    /// `nil` when not decimal; `.some(nil)` when decimal but out of range.
    static func parseDecimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64?? {
        var digits = bytes[...]
        var negative = false
        if let first = digits.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            negative = first == UInt8(ascii: "-")
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty else { return nil }
        // Accumulate negatively so Int64.min is representable; a non-digit anywhere means not
        // decimal at all, even after an overflow.
        var value: Int64 = 0
        var overflow = false
        for byte in digits {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.subtractingReportingOverflow(Int64(byte - 0x30))
            overflow = overflow || o1 || o2
            value = next
        }
        if overflow { return .some(nil) }
        if negative { return .some(value) }
        if value == Int64.min { return .some(nil) }
        return .some(-value)
    }

    /// The value of `h` followed by 1 to 16 hex digits; `nil` for any other text.
    package static func parseWireHex(_ text: String) -> UInt64? {
        var copy = text
        return copy.withUTF8 { parseWireHex($0) }
    }

    private static func parseWireHex(_ utf8: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard utf8.count >= 2, utf8.count <= 17, utf8.first == UInt8(ascii: "h") else { return nil }
        var value: UInt64 = 0
        for byte in utf8.dropFirst() {
            switch byte {
            case 0x30...0x39: value = value << 4 | UInt64(byte - 0x30)
            case 0x61...0x66: value = value << 4 | UInt64(byte - 0x61 + 10)
            case 0x41...0x46: value = value << 4 | UInt64(byte - 0x41 + 10)
            default: return nil
            }
        }
        return value
    }

    package static func parseUUID(_ text: String) -> Form? {
        var copy = text
        return copy.withUTF8 { parseUUID($0) }
    }

    private static func parseUUID(_ utf8: UnsafeBufferPointer<UInt8>) -> Form? {
        guard utf8.count == 36 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        var sawLower = false
        var sawUpper = false
        var nibbles = 0
        for (index, byte) in utf8.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt8
            switch byte {
            case 0x30...0x39: nibble = byte - 0x30
            case 0x61...0x66:
                nibble = byte - 0x61 + 10
                sawLower = true
            case 0x41...0x46:
                nibble = byte - 0x41 + 10
                sawUpper = true
            default: return nil
            }
            if nibbles < 16 { high = high << 4 | UInt64(nibble) } else { low = low << 4 | UInt64(nibble) }
            nibbles += 1
        }
        let uppercase: Bool? = sawLower && sawUpper ? nil : sawUpper
        return .uuid((high, low), uppercase: uppercase)
    }

    /// The canonical text of a UUID from its bytes.
    package static func uuidText(_ bytes: UUIDBytes, uppercase: Bool) -> String {
        let digits: [UInt8] = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for index in 0..<32 {
            if index == 8 || index == 12 || index == 16 || index == 20 { out.append(UInt8(ascii: "-")) }
            let word = index < 16 ? bytes.0 : bytes.1
            let shift = UInt64(60 - (index % 16) * 4)
            out.append(digits[Int((word >> shift) & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension MessageID.Form {
    public static func == (lhs: MessageID.Form, rhs: MessageID.Form) -> Bool {
        switch (lhs, rhs) {
        case (.decimal(let a), .decimal(let b)): a == b
        case (.uuid(let a, let ua), .uuid(let b, let ub)): a.0 == b.0 && a.1 == b.1 && ua == ub
        case (.hex(let a), .hex(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .decimal(let value): hasher.combine(value)
        case .uuid(let bytes, let uppercase):
            hasher.combine(bytes.0)
            hasher.combine(bytes.1)
            hasher.combine(uppercase)
        case .hex(let value):
            hasher.combine(2 as UInt8)
            hasher.combine(value)
        }
    }
}

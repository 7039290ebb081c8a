public import RelayCore

extension MessageID {
    /// What is sent after `h` in a tracking hit: the UUID unchanged, the hex digits exactly as
    /// received, or a decimal as lowercase hex: of its 64-bit value when it is not negative, of its
    /// low 32 bits when it is a negative 32-bit number (the Android SDK rule), of its 64-bit two's
    /// complement otherwise.
    public var wireForm: String {
        switch form {
        case .uuid:
            return text
        case .hex:
            return String(text.dropFirst())
        case .decimal(let value):
            if value >= 0 { return String(value, radix: 16) }
            if value >= Int64(Int32.min) { return String(UInt32(truncatingIfNeeded: value), radix: 16) }
            return String(UInt64(bitPattern: value), radix: 16)
        }
    }

    /// The message id of a hit as it arrived after `h` (``TrackingHitID/messageID``): a UUID, kept
    /// as is, or 1 to 16 hex digits, kept with the `h` as the hex form's text.
    ///
    /// - Throws: ``EventInputError`` for `messageId` when it is neither.
    public init(wire: String) throws(EventInputError) {
        if let form = Self.parseUUID(wire) {
            self.init(uncheckedText: wire, form: form)
        } else if let value = Self.parseWireHex("h" + wire) {
            self.init(uncheckedText: "h" + wire, form: .hex(value))
        } else {
            throw EventInputError(field: "messageId", "message id \(wire.quotedForMessage) is neither a UUID nor 1 to 16 hex digits")
        }
    }
}

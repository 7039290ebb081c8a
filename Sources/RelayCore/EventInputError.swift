/// Why an event given to the relay was refused.
///
/// Every rejection names the field (when one is at fault) and the rule it broke, so that a person
/// reading `line 7: messageId "a8a" is neither a UUID nor a decimal integer` knows what to fix.
/// Nothing is stored for a refused event.
public struct EventInputError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The JSON field at fault (its canonical name), or `nil` when the whole event is malformed.
    public var field: String?
    /// The rule that was broken, as a sentence fragment that starts with the field when there is one.
    public var message: String

    /// Creates an error about `field` (or about the whole event when `field` is `nil`).
    public init(field: String?, _ message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { message }
}

extension String {
    /// The string as a JSON string literal, for quoting offending values inside error messages.
    ///
    /// Long values are cut to keep messages readable.
    public var quotedForMessage: String {
        let limit = 64
        if utf8.count <= limit { return JSONText.quoted(self) }
        return JSONText.quoted(String(decoding: utf8.prefix(limit), as: UTF8.self)) + "…"
    }
}

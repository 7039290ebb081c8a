/// Text that is not valid JSON (RFC 8259), with the byte offset where parsing stopped.
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Zero-based byte offset into the parsed text.
    public var offset: Int
    /// What was expected or found there.
    public var reason: String

    /// Creates a syntax error at `offset`.
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// A failed SQLite call: the result code, SQLite's message, and the statement or file involved.
public struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The SQLite result code (`SQLITE_BUSY`, `SQLITE_CORRUPT`, …).
    public var code: Int32
    /// SQLite's explanation.
    public var message: String
    /// The SQL text or database path the call was about.
    public var context: String

    /// Creates an error.
    public init(code: Int32, message: String, context: String) {
        self.code = code
        self.message = message
        self.context = context
    }

    public var description: String { "SQLite error \(code) (\(message)) in \(context)" }
}

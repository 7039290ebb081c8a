import CSQLite

/// A compiled statement of a ``SQLiteConnection``; bind parameters (1-based), step, read columns.
public final class SQLiteStatement {
    let statement: OpaquePointer
    let connection: SQLiteConnection
    /// The statement's SQL text.
    public let sql: String

    init(statement: OpaquePointer, connection: SQLiteConnection, sql: String) {
        self.statement = statement
        self.connection = connection
        self.sql = sql
    }

    private var isFinalized = false

    deinit {
        if !isFinalized { sqlite3_finalize(statement) }
    }

    /// Releases the statement now (before its connection closes); it must not be used afterwards.
    public func finalize() {
        guard !isFinalized else { return }
        isFinalized = true
        sqlite3_finalize(statement)
    }

    /// Binds text to parameter `index` (1-based); SQLite copies it.
    public func bind(_ index: Int32, _ text: String) throws(SQLiteError) {
        var copy = text
        let code = copy.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { chars in
                csqlite_bind_text_transient(statement, index, chars.baseAddress, Int32(chars.count))
            }
        }
        guard code == SQLITE_OK else { throw connection.error(code, sql) }
    }

    /// Binds an integer to parameter `index` (1-based).
    public func bind(_ index: Int32, _ value: Int64) throws(SQLiteError) {
        let code = sqlite3_bind_int64(statement, index, value)
        guard code == SQLITE_OK else { throw connection.error(code, sql) }
    }

    /// Binds bytes to parameter `index` (1-based); SQLite copies them.
    public func bind(_ index: Int32, blob bytes: [UInt8]) throws(SQLiteError) {
        let code = bytes.withUnsafeBytes { raw in
            csqlite_bind_blob_transient(statement, index, raw.baseAddress, Int32(raw.count))
        }
        guard code == SQLITE_OK else { throw connection.error(code, sql) }
    }

    /// Binds SQL NULL to parameter `index` (1-based).
    public func bindNull(_ index: Int32) throws(SQLiteError) {
        let code = sqlite3_bind_null(statement, index)
        guard code == SQLITE_OK else { throw connection.error(code, sql) }
    }

    /// Advances: `true` when a row is available, `false` when the statement is done.
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        SQLiteConnection.checkThread(sql)
        let code = sqlite3_step(statement)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(code, sql)
        }
    }

    /// Resets the statement for another run and clears its bindings.
    public func reset() {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
    }

    /// The integer in column `index` (0-based) of the current row.
    public func int64(_ index: Int32) -> Int64 {
        sqlite3_column_int64(statement, index)
    }

    /// The row id of the last row inserted through the statement's connection.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(connection.handle) }

    /// The bytes in column `index` (0-based) of the current row: empty for an empty blob or NULL.
    public func blob(_ index: Int32) -> [UInt8] {
        // sqlite3_column_bytes after sqlite3_column_blob: the order SQLite documents for blobs.
        guard let pointer = sqlite3_column_blob(statement, index) else { return [] }
        let count = Int(sqlite3_column_bytes(statement, index))
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Whether column `index` (0-based) of the current row holds an integer (SQLite's storage
    /// class of the value, not the column's declared type).
    public func isInteger(_ index: Int32) -> Bool {
        sqlite3_column_type(statement, index) == SQLITE_INTEGER
    }

    /// The text in column `index` (0-based) of the current row, or `nil` for NULL.
    public func text(_ index: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, index) else { return nil }
        return String(cString: pointer)
    }
}

import CSQLite
import RelayIO

/// One SQLite connection, used by one owner at a time: an actor whose executor is a
/// ``BlockingExecutor``, so every call runs on a thread made for blocking work.
///
/// Not `Sendable`: SQLite connections must not be used from two threads at once, and the owner
/// (for example the aggregator actor) serialises every call. Debug builds check on every call that
/// it runs on a ``BlockingExecutor``'s thread, so a call from the cooperative pool (a route
/// handler, an actor on the default executor) stops the test run that makes it.
public final class SQLiteConnection {
    let handle: OpaquePointer
    private var isClosed = false
    /// The database file.
    public let path: String

    /// Opens (creating if needed) the database at `path`.
    ///
    /// - Parameter readOnly: open without write access (and without creating the file).
    /// - Throws: ``SQLiteError`` when the file cannot be opened (missing directory, permissions,
    ///   not a database).
    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        Self.checkThread(path)
        var pointer: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &pointer, flags, nil)
        guard code == SQLITE_OK, let pointer else {
            let message = pointer.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(pointer)
            throw SQLiteError(code: code, message: message, context: "opening \(path)")
        }
        handle = pointer
        self.path = path
        sqlite3_busy_timeout(handle, 5000)
    }

    deinit {
        if !isClosed { sqlite3_close_v2(handle) }
    }

    /// Closes the connection now (statements prepared from it must not be used afterwards). In
    /// WAL mode the last connection to close checkpoints and removes the `-wal` file.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        sqlite3_close_v2(handle)
    }

    /// How durable each commit is (`PRAGMA synchronous`).
    public enum Synchronous: String, Sendable {
        /// Every commit is fsync'ed before it returns.
        case full = "FULL"
        /// In WAL mode, commits are atomic but the last ones may be lost to a power cut.
        case normal = "NORMAL"
    }

    /// Opens (creating if needed) the database at `path` in WAL journal mode, so readers never block
    /// the writer, with commits as durable as `synchronous` says.
    public convenience init(path: String, walWithSynchronous synchronous: Synchronous) throws(SQLiteError) {
        try self.init(path: path)
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=\(synchronous.rawValue)")
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int32 { sqlite3_changes(handle) }

    /// Runs one or more statements that return no rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        Self.checkThread(sql)
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw SQLiteError(code: code, message: text, context: sql)
        }
    }

    /// Compiles a statement for repeated use.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        Self.checkThread(sql)
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else { throw error(code, sql) }
        return SQLiteStatement(statement: statement, connection: self, sql: sql)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func transaction<Value>(_ body: () throws(SQLiteError) -> Value) throws(SQLiteError) -> Value {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// In debug builds, stops when SQLite is called off the I/O boundary.
    static func checkThread(_ context: @autoclosure () -> String) {
        assert(
            BlockingExecutor.isCurrentThreadBlocking,
            "SQLite called outside a BlockingExecutor (\(context())): run it in an actor on one, or in BlockingExecutor.run"
        )
    }

    func error(_ code: Int32, _ context: String) -> SQLiteError {
        SQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle)), context: context)
    }
}

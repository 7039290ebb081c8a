import RelayCore
import RelayIO
import RelaySQLite

/// The SQLite baseline behind one thread of its own, as an SDK's persistent queue runs it (and as
/// the relay runs every SQLite connection): appends from many tasks wait their turn, one durable
/// transaction each.
public actor SerializedSQLiteEventQueue: BlockingActor {
    public nonisolated let executor: BlockingExecutor
    private let queue: SQLiteEventQueue

    /// Opens (creating) the queue database at `path`.
    public init(path: String) async throws(SQLiteError) {
        let executor = BlockingExecutor(name: "sqlite-baseline")
        self.executor = executor
        queue = try await executor.run { () throws(SQLiteError) -> SQLiteEventQueue in try SQLiteEventQueue(path: path) }
    }

    /// Inserts `events` in one durable transaction once earlier appends are done.
    public func append(_ events: [Event]) throws(SQLiteError) {
        try queue.append(events)
    }

    /// Moves the WAL into the database file so its size can be measured.
    public func checkpoint() throws(SQLiteError) {
        try queue.checkpoint()
    }
}

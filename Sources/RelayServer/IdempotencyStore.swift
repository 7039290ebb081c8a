public import RelayCore
public import RelayIO
public import RelaySQLite

/// Remembers `Idempotency-Key`s of `POST /v1/events` durably, so a retried request gets the
/// original answer and its events are stored once.
///
/// Before the append, a *pending* record keeps the request's digest, the log position it started
/// from and the time given to events without one. After the append it becomes *completed* with
/// the answer. A retry that finds a pending record (the relay crashed in between) looks in the log
/// from that position for the request's events: those found are not appended again.
///
/// The records are in `<data-dir>/idempotency.sqlite`, or, with a ``RelayCore/IdempotencyTable``
/// (the log kept in PostgreSQL), in that table only.
public actor IdempotencyStore: BlockingActor {
    /// What the store knows about a key.
    public enum Entry: Sendable, Hashable {
        /// The request was answered: the same answer again.
        case completed(digest: UInt64, status: Int, body: String)
        /// The request started but its answer was not recorded (a crash, or it is under way).
        case pending(digest: UInt64, startSequence: UInt64, defaultTimeNanoseconds: Int64)
    }

    /// The thread every SQLite call of the store runs on.
    public nonisolated let executor: BlockingExecutor
    /// The SQLite file's statements; `nil` with a table.
    private let file: Opened?
    private let table: (any IdempotencyTable)?
    /// How long keys are remembered.
    public let window: Duration
    private var inFlight = Set<String>()

    /// The database file of a data directory.
    public static func path(dataDirectory: String) -> String { "\(dataDirectory)/idempotency.sqlite" }

    /// The open database and its statements.
    private struct Opened {
        var connection: SQLiteConnection
        var find: SQLiteStatement
        var insertPending: SQLiteStatement
        var complete: SQLiteStatement
    }

    /// Opens (creating) the store of `dataDirectory` on a thread of its own, forgetting keys older
    /// than `window`. With a `table`, the keys are kept there and no file is made; keys older than
    /// `window` are forgotten there now (or at a later start, should the database not answer).
    public init(dataDirectory: String, window: Duration, table: (any IdempotencyTable)? = nil) async throws(SQLiteError) {
        let executor = BlockingExecutor(name: "sqlite-idempot")
        self.executor = executor
        self.window = window
        self.table = table
        if let table {
            file = nil
            try? await table.forget(olderThanSeconds: window.components.seconds)
        } else {
            let path = Self.path(dataDirectory: dataDirectory)
            file = try await executor.run { () throws(SQLiteError) -> Opened in try Self.open(path: path, window: window) }
        }
    }

    private static func open(path: String, window: Duration) throws(SQLiteError) -> Opened {
        let connection = try SQLiteConnection(path: path, walWithSynchronous: .full)
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS idempotency_keys (
                key TEXT PRIMARY KEY,
                digest INTEGER NOT NULL,
                start_sequence INTEGER NOT NULL,
                default_time_ns INTEGER NOT NULL,
                status INTEGER,
                body TEXT,
                created_ns INTEGER NOT NULL
            ) WITHOUT ROWID
            """
        )
        let find = try connection.prepare("SELECT digest, start_sequence, default_time_ns, status, body FROM idempotency_keys WHERE key = ?")
        let insertPending = try connection.prepare(
            "INSERT OR REPLACE INTO idempotency_keys (key, digest, start_sequence, default_time_ns, status, body, created_ns) VALUES (?, ?, ?, ?, NULL, NULL, ?)"
        )
        let complete = try connection.prepare("UPDATE idempotency_keys SET status = ?, body = ? WHERE key = ?")
        let cutoff = EventTime.now().nanosecondsSinceEpoch - Int64(window.components.seconds) * 1_000_000_000
        try connection.execute("DELETE FROM idempotency_keys WHERE created_ns < \(cutoff)")
        return Opened(connection: connection, find: find, insertPending: insertPending, complete: complete)
    }

    /// Claims `key` for one request at a time; `false` when a request with it is under way.
    public func claim(_ key: String) -> Bool { inFlight.insert(key).inserted }

    /// Releases a key claimed with ``claim(_:)``.
    public func release(_ key: String) { inFlight.remove(key) }

    /// What is known of `key`.
    ///
    /// - Throws: ``RelaySQLite/SQLiteError``, or the table's error.
    public func entry(_ key: String) async throws -> Entry? {
        guard let file else {
            guard let record = try await table?.record(of: key) else { return nil }
            if let status = record.status, let body = record.body { return .completed(digest: record.digest, status: status, body: body) }
            return .pending(digest: record.digest, startSequence: record.startSequence, defaultTimeNanoseconds: record.defaultTimeNanoseconds)
        }
        let find = file.find
        find.reset()
        defer { find.reset() }
        try find.bind(1, key)
        guard try find.step() else { return nil }
        let digest = UInt64(bitPattern: find.int64(0))
        if let body = find.text(4) {
            return .completed(digest: digest, status: Int(find.int64(3)), body: body)
        }
        return .pending(digest: digest, startSequence: UInt64(bitPattern: find.int64(1)), defaultTimeNanoseconds: find.int64(2))
    }

    /// Durably records that a request with `key` is about to append from `startSequence`.
    ///
    /// - Throws: ``RelaySQLite/SQLiteError``, or the table's error.
    public func recordPending(_ key: String, digest: UInt64, startSequence: UInt64, defaultTime: EventTime) async throws {
        guard let file else {
            try await table?.recordPending(
                key, digest: digest, startSequence: startSequence, defaultTimeNanoseconds: defaultTime.nanosecondsSinceEpoch)
            return
        }
        let insertPending = file.insertPending
        insertPending.reset()
        try insertPending.bind(1, key)
        try insertPending.bind(2, Int64(bitPattern: digest))
        try insertPending.bind(3, Int64(bitPattern: startSequence))
        try insertPending.bind(4, defaultTime.nanosecondsSinceEpoch)
        try insertPending.bind(5, EventTime.now().nanosecondsSinceEpoch)
        try insertPending.step()
    }

    /// Durably records the answer given to the request with `key`.
    ///
    /// - Throws: ``RelaySQLite/SQLiteError``, or the table's error.
    public func recordCompleted(_ key: String, status: Int, body: String) async throws {
        guard let file else {
            try await table?.recordCompleted(key, status: status, body: body)
            return
        }
        let complete = file.complete
        complete.reset()
        try complete.bind(1, Int64(status))
        try complete.bind(2, body)
        try complete.bind(3, key)
        try complete.step()
    }

    /// FNV-1a of the request body, to recognise a key reused for another request.
    public static func digest(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}

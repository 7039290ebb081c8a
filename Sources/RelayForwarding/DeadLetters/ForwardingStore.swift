import CampaignProtocol
public import RelayCore
import RelayEventJSON
public import RelayIO
public import RelaySQLite

/// `<data-dir>/forwarding.sqlite`: the dead-letter store and the last registration delivered per
/// device token (for the SDKs' "skip an unchanged registration" rule).
public actor ForwardingStore: BlockingActor {
    /// The database file of a data directory.
    public static func path(dataDirectory: String) -> String { "\(dataDirectory)/forwarding.sqlite" }

    /// The thread every SQLite call of the store runs on.
    public nonisolated let executor: BlockingExecutor
    private let connection: SQLiteConnection
    private let insertDeadLetter: SQLiteStatement
    private let findDelivered: SQLiteStatement
    private let upsertDelivered: SQLiteStatement

    /// The open database and the statements used on every event.
    private struct Opened {
        var connection: SQLiteConnection
        var insertDeadLetter: SQLiteStatement
        var findDelivered: SQLiteStatement
        var upsertDelivered: SQLiteStatement
    }

    /// Opens (creating) the store of `dataDirectory`, on a thread of its own.
    public init(dataDirectory: String) async throws(SQLiteError) {
        let executor = BlockingExecutor(name: "sqlite-forward")
        let path = Self.path(dataDirectory: dataDirectory)
        let opened = try await executor.run { () throws(SQLiteError) -> Opened in try Self.open(path: path) }
        self.executor = executor
        connection = opened.connection
        insertDeadLetter = opened.insertDeadLetter
        findDelivered = opened.findDelivered
        upsertDelivered = opened.upsertDelivered
    }

    private static func open(path: String) throws(SQLiteError) -> Opened {
        let connection = try SQLiteConnection(path: path, walWithSynchronous: .full)
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS dead_letters (
                id INTEGER PRIMARY KEY,
                sequence INTEGER NOT NULL,
                event_json TEXT NOT NULL,
                url TEXT NOT NULL,
                status INTEGER NOT NULL,
                response_body TEXT NOT NULL,
                dead_lettered_at TEXT NOT NULL,
                requeued_at TEXT,
                requeued_sequence INTEGER,
                reason TEXT
            );
            CREATE TABLE IF NOT EXISTS delivered_registrations (
                platform TEXT NOT NULL,
                integration_key TEXT NOT NULL,
                registration_token TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                delivered_at TEXT NOT NULL,
                PRIMARY KEY (platform, integration_key, registration_token)
            ) WITHOUT ROWID;
            """
        )
        // Stores made before `reason` existed get the column (empty for their letters).
        let columns = try connection.prepare("SELECT count(*) FROM pragma_table_info('dead_letters') WHERE name = 'reason'")
        _ = try columns.step()
        if columns.int64(0) == 0 { try connection.execute("ALTER TABLE dead_letters ADD COLUMN reason TEXT") }
        let insertDeadLetter = try connection.prepare(
            "INSERT INTO dead_letters (sequence, event_json, url, status, response_body, dead_lettered_at, reason) VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
        let findDelivered = try connection.prepare(
            "SELECT fingerprint, delivered_at FROM delivered_registrations WHERE platform = ? AND integration_key = ? AND registration_token = ?"
        )
        let upsertDelivered = try connection.prepare(
            "INSERT INTO delivered_registrations (platform, integration_key, registration_token, fingerprint, delivered_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET fingerprint = excluded.fingerprint, delivered_at = excluded.delivered_at"
        )
        return Opened(
            connection: connection, insertDeadLetter: insertDeadLetter, findDelivered: findDelivered, upsertDelivered: upsertDelivered
        )
    }

    /// Durably records an event given up on: `status` and `body` are the host's last answer (status
    /// 0 when there was none: `body` then says what failed), `reason` why the relay gave up.
    public func deadLetter(sequence: UInt64, event: Event, url: String, status: Int, body: String, reason: String) throws(SQLiteError) {
        insertDeadLetter.reset()
        try insertDeadLetter.bind(1, Int64(bitPattern: sequence))
        try insertDeadLetter.bind(2, EventEncoder.json(event))
        try insertDeadLetter.bind(3, url)
        try insertDeadLetter.bind(4, Int64(status))
        try insertDeadLetter.bind(5, body)
        try insertDeadLetter.bind(6, EventTime.now().rfc3339)
        try insertDeadLetter.bind(7, reason)
        try insertDeadLetter.step()
    }

    /// Dead letters, oldest first; re-queued ones too when `includeRequeued`.
    public func deadLetters(includeRequeued: Bool = false, limit: Int? = nil) throws(SQLiteError) -> [DeadLetter] {
        var sql =
            "SELECT id, sequence, event_json, url, status, response_body, dead_lettered_at, requeued_at, requeued_sequence, reason FROM dead_letters"
        if !includeRequeued { sql += " WHERE requeued_at IS NULL" }
        sql += " ORDER BY id"
        if let limit { sql += " LIMIT \(max(0, limit))" }
        let statement = try connection.prepare(sql)
        var letters: [DeadLetter] = []
        while try statement.step() {
            let requeuedAt = statement.text(7)
            letters.append(
                DeadLetter(
                    id: statement.int64(0), sequence: UInt64(bitPattern: statement.int64(1)), eventJSON: statement.text(2) ?? "",
                    url: statement.text(3) ?? "", status: Int(statement.int64(4)), responseBody: statement.text(5) ?? "",
                    deadLetteredAt: statement.text(6) ?? "", requeued: requeuedAt.map { ($0, UInt64(bitPattern: statement.int64(8))) },
                    reason: statement.text(9) ?? ""
                )
            )
        }
        return letters
    }

    /// Marks dead letter `id` as re-queued (appended to the log again as `sequence`).
    public func markRequeued(id: Int64, sequence: UInt64) throws(SQLiteError) {
        let statement = try connection.prepare("UPDATE dead_letters SET requeued_at = ?, requeued_sequence = ? WHERE id = ?")
        try statement.bind(1, EventTime.now().rfc3339)
        try statement.bind(2, Int64(bitPattern: sequence))
        try statement.bind(3, id)
        try statement.step()
    }

    /// Dead letters not re-queued.
    public func pendingDeadLetterCount() throws(SQLiteError) -> Int {
        let statement = try connection.prepare("SELECT count(*) FROM dead_letters WHERE requeued_at IS NULL")
        _ = try statement.step()
        return Int(statement.int64(0))
    }

    /// Whether `registration` equals the last one delivered for its device token, delivered less
    /// than `window` ago (so an opt-out followed by an opt-in still reaches Campaign in time).
    public func isUnchanged(_ registration: Registration, within window: Duration) throws(SQLiteError) -> Bool {
        findDelivered.reset()
        try findDelivered.bind(1, registration.platform.rawValue)
        try findDelivered.bind(2, registration.integrationKey)
        try findDelivered.bind(3, registration.registrationToken)
        defer { findDelivered.reset() }
        guard try findDelivered.step(), findDelivered.text(0) == Self.fingerprint(registration) else { return false }
        guard let text = findDelivered.text(1), let delivered = try? EventTime(rfc3339: text, field: "delivered_at") else { return false }
        return EventTime.now().nanosecondsSinceEpoch - delivered.nanosecondsSinceEpoch < window.nanoseconds
    }

    /// Remembers `registration` as the last one delivered for its device token.
    public func recordDelivered(_ registration: Registration) throws(SQLiteError) {
        upsertDelivered.reset()
        try upsertDelivered.bind(1, registration.platform.rawValue)
        try upsertDelivered.bind(2, registration.integrationKey)
        try upsertDelivered.bind(3, registration.registrationToken)
        try upsertDelivered.bind(4, Self.fingerprint(registration))
        try upsertDelivered.bind(5, EventTime.now().rfc3339)
        try upsertDelivered.step()
    }

    /// What the SDKs compare: the user key and the parameters (as the platform sends them).
    static func fingerprint(_ registration: Registration) -> String {
        (registration.userKey ?? "") + "\u{1F}" + AdditionalParamsXML.xml(registration.additionalParams, platform: registration.platform)
    }
}

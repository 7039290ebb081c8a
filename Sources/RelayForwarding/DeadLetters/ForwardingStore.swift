import CampaignProtocol
public import RelayCore
import RelayEventJSON
public import RelayIO
public import RelaySQLite

/// `<data-dir>/forwarding.sqlite`: the dead-letter store and the last registration delivered per
/// tenant's device token (for the SDKs' "skip an unchanged registration" rule).
public actor ForwardingStore: BlockingActor {
    /// The database file of a data directory.
    public static func path(dataDirectory: String) -> String { "\(dataDirectory)/forwarding.sqlite" }

    /// The thread every SQLite call of the store runs on.
    public nonisolated let executor: BlockingExecutor
    private let connection: SQLiteConnection
    private let dataDirectory: String
    /// The data directory's pseudonymizer, read or made on first use.
    private var loadedPseudonymizer: Pseudonymizer?
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
        self.dataDirectory = dataDirectory
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
            \(deliveredRegistrationsTable("delivered_registrations"))
            """
        )
        // Stores made before `reason` existed get the column (empty for their letters), and
        // before tenants `tenant` (the default tenant's, '').
        if try !hasColumn("reason", of: "dead_letters", connection) { try connection.execute("ALTER TABLE dead_letters ADD COLUMN reason TEXT") }
        if try !hasColumn("tenant", of: "dead_letters", connection) {
            try connection.execute("ALTER TABLE dead_letters ADD COLUMN tenant TEXT NOT NULL DEFAULT ''")
        }
        if try !hasColumn("tenant", of: "delivered_registrations", connection) {
            // Two tenants may have an app key and a token in common: each tenant's delivery is
            // remembered apart, so one tenant's never makes another's look unchanged.
            try connection.transaction { () throws(SQLiteError) in
                try connection.execute(deliveredRegistrationsTable("delivered_registrations_by_tenant"))
                try connection.execute(
                    "INSERT INTO delivered_registrations_by_tenant (tenant, platform, integration_key, registration_token, fingerprint, delivered_at) SELECT '', platform, integration_key, registration_token, fingerprint, delivered_at FROM delivered_registrations"
                )
                try connection.execute("DROP TABLE delivered_registrations")
                try connection.execute("ALTER TABLE delivered_registrations_by_tenant RENAME TO delivered_registrations")
            }
        }
        let insertDeadLetter = try connection.prepare(
            "INSERT INTO dead_letters (sequence, event_json, url, status, response_body, dead_lettered_at, reason, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        let findDelivered = try connection.prepare(
            "SELECT fingerprint, delivered_at FROM delivered_registrations WHERE tenant = ? AND platform = ? AND integration_key = ? AND registration_token = ?"
        )
        let upsertDelivered = try connection.prepare(
            "INSERT INTO delivered_registrations (tenant, platform, integration_key, registration_token, fingerprint, delivered_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET fingerprint = excluded.fingerprint, delivered_at = excluded.delivered_at"
        )
        return Opened(
            connection: connection, insertDeadLetter: insertDeadLetter, findDelivered: findDelivered, upsertDelivered: upsertDelivered
        )
    }

    /// `delivered_registrations` under `name`: the last registration delivered per tenant
    /// (`''`: the default tenant) and device token.
    private static func deliveredRegistrationsTable(_ name: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(name) (
            tenant TEXT NOT NULL DEFAULT '',
            platform TEXT NOT NULL,
            integration_key TEXT NOT NULL,
            registration_token TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            delivered_at TEXT NOT NULL,
            PRIMARY KEY (tenant, platform, integration_key, registration_token)
        ) WITHOUT ROWID;
        """
    }

    private static func hasColumn(_ column: String, of table: String, _ connection: SQLiteConnection) throws(SQLiteError) -> Bool {
        let statement = try connection.prepare("SELECT count(*) FROM pragma_table_info('\(table)') WHERE name = '\(column)'")
        defer { statement.finalize() }
        _ = try statement.step()
        return statement.int64(0) > 0
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
        try insertDeadLetter.bind(8, event.tenant.storedName)
        try insertDeadLetter.step()
    }

    /// Dead letters of `tenant`, oldest first; re-queued ones too when `includeRequeued`.
    public func deadLetters(tenant: TenantSelection = .all, includeRequeued: Bool = false, limit: Int? = nil) throws(SQLiteError) -> [DeadLetter] {
        var sql =
            "SELECT id, sequence, event_json, url, status, response_body, dead_lettered_at, requeued_at, requeued_sequence, reason, tenant FROM dead_letters WHERE (?1 IS NULL OR tenant = ?1)"
        if !includeRequeued { sql += " AND requeued_at IS NULL" }
        sql += " ORDER BY id"
        if let limit { sql += " LIMIT \(max(0, limit))" }
        let statement = try connection.prepare(sql)
        if let stored = tenant.storedName { try statement.bind(1, stored) }
        var letters: [DeadLetter] = []
        while try statement.step() {
            let requeuedAt = statement.text(7)
            letters.append(
                DeadLetter(
                    id: statement.int64(0), sequence: UInt64(bitPattern: statement.int64(1)), eventJSON: statement.text(2) ?? "",
                    url: statement.text(3) ?? "", status: Int(statement.int64(4)), responseBody: statement.text(5) ?? "",
                    deadLetteredAt: statement.text(6) ?? "", requeued: requeuedAt.map { ($0, UInt64(bitPattern: statement.int64(8))) },
                    reason: statement.text(9) ?? "", tenant: TenantName.displayName(stored: statement.text(10) ?? "")
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

    /// The keyed hashes that stand for personal data where dead letters are shown
    /// (`<data-dir>/pseudonym.key`, made the first time, on the store's thread).
    ///
    /// - Throws: ``Pseudonymizer/KeyFileError`` when the key file cannot be read or written.
    public func pseudonymizer() throws(Pseudonymizer.KeyFileError) -> Pseudonymizer {
        if let loadedPseudonymizer { return loadedPseudonymizer }
        let loaded = try Pseudonymizer.load(dataDirectory: dataDirectory)
        loadedPseudonymizer = loaded
        return loaded
    }

    /// Dead letters of `tenant` not re-queued.
    public func pendingDeadLetterCount(tenant: TenantSelection = .all) throws(SQLiteError) -> Int {
        let statement = try connection.prepare("SELECT count(*) FROM dead_letters WHERE requeued_at IS NULL AND (?1 IS NULL OR tenant = ?1)")
        if let stored = tenant.storedName { try statement.bind(1, stored) }
        _ = try statement.step()
        return Int(statement.int64(0))
    }

    /// Dead letters not re-queued, by tenant (`''`: the default tenant); a tenant with none is absent.
    public func pendingDeadLetterCountsByTenant() throws(SQLiteError) -> [String: Int] {
        let statement = try connection.prepare("SELECT tenant, count(*) FROM dead_letters WHERE requeued_at IS NULL GROUP BY tenant")
        var counts: [String: Int] = [:]
        while try statement.step() { counts[statement.text(0) ?? ""] = Int(statement.int64(1)) }
        return counts
    }

    /// Whether `registration` equals the last one delivered for its device token, delivered less
    /// than `window` ago (so an opt-out followed by an opt-in still reaches Campaign in time).
    public func isUnchanged(_ registration: Registration, within window: Duration) throws(SQLiteError) -> Bool {
        findDelivered.reset()
        try findDelivered.bind(1, registration.tenant.storedName)
        try findDelivered.bind(2, registration.platform.rawValue)
        try findDelivered.bind(3, registration.integrationKey)
        try findDelivered.bind(4, registration.registrationToken)
        defer { findDelivered.reset() }
        guard try findDelivered.step(), findDelivered.text(0) == Self.fingerprint(registration) else { return false }
        guard let text = findDelivered.text(1), let delivered = try? EventTime(rfc3339: text, field: "delivered_at") else { return false }
        return EventTime.now().nanosecondsSinceEpoch - delivered.nanosecondsSinceEpoch < window.nanoseconds
    }

    /// Remembers `registration` as the last one delivered for its device token.
    public func recordDelivered(_ registration: Registration) throws(SQLiteError) {
        upsertDelivered.reset()
        try upsertDelivered.bind(1, registration.tenant.storedName)
        try upsertDelivered.bind(2, registration.platform.rawValue)
        try upsertDelivered.bind(3, registration.integrationKey)
        try upsertDelivered.bind(4, registration.registrationToken)
        try upsertDelivered.bind(5, Self.fingerprint(registration))
        try upsertDelivered.bind(6, EventTime.now().rfc3339)
        try upsertDelivered.step()
    }

    /// What the SDKs compare: the user key and the parameters (as the platform sends them).
    static func fingerprint(_ registration: Registration) -> String {
        (registration.userKey ?? "") + "\u{1F}" + AdditionalParamsXML.xml(registration.additionalParams, platform: registration.platform)
    }
}

import CampaignProtocol
public import RelayCore
import RelayEventJSON
public import RelayIO
public import RelayLog
public import RelaySQLite

/// `<data-dir>/forwarding.sqlite`: the dead-letter store and the last registration delivered per
/// tenant's device token (for the SDKs' "skip an unchanged registration" rule). On the log in
/// PostgreSQL, the dead letters are kept in the log's database instead (a ``DeadLetterTable``),
/// where losing this disk does not lose them.
///
/// Neither holds personal data in the clear when the log is encrypted: a dead letter's event, URL
/// and answer are sealed with the newest key (``SealedText``), and a delivered registration is
/// remembered by the SHA-256 of its token and of its token with its user key and parameters
/// (always, encrypted or not: the rule only compares them).
public actor ForwardingStore: BlockingActor {
    /// The database file of a data directory.
    public static func path(dataDirectory: String) -> String { "\(dataDirectory)/forwarding.sqlite" }

    /// The thread every SQLite call of the store runs on.
    public nonisolated let executor: BlockingExecutor
    let connection: SQLiteConnection
    private let dataDirectory: String
    /// Where `pseudonym.key` is (the relay's data directory, also for an adopted stream's store).
    private let pseudonymDirectory: String
    /// The data directory's pseudonymizer, read or made on first use.
    private var loadedPseudonymizer: Pseudonymizer?
    private let insertDeadLetter: SQLiteStatement
    let findDelivered: SQLiteStatement
    let upsertDelivered: SQLiteStatement
    /// The keys that seal dead letters (the log's `--encryption-key-file`); `nil`: in the clear.
    let keys: LogKeyRing?
    /// Where the dead letters are kept when not in this file (the log's PostgreSQL database).
    let table: (any DeadLetterTable)?

    /// `PRAGMA user_version` of a store whose delivered registrations are hashed.
    static let hashedDeliveriesVersion: Int64 = 1

    /// The open database and the statements used on every event.
    private struct Opened {
        var connection: SQLiteConnection
        var insertDeadLetter: SQLiteStatement
        var findDelivered: SQLiteStatement
        var upsertDelivered: SQLiteStatement
    }

    /// Opens (creating) the store of `dataDirectory`, on a thread of its own; dead letters are
    /// sealed with the newest of `keys`, and sealed ones opened with any of them. With a `table`,
    /// the dead letters are kept there, and the file keeps only the delivered registrations.
    /// `pseudonymDirectory` holds the pseudonym key (by default `dataDirectory`): a store kept in a
    /// subdirectory names a person by the same keyed hash as the relay.
    public init(
        dataDirectory: String, keys: LogKeyRing? = nil, table: (any DeadLetterTable)? = nil, pseudonymDirectory: String? = nil
    ) async throws(SQLiteError) {
        self.keys = keys
        self.table = table
        let executor = BlockingExecutor(name: "sqlite-forward")
        let path = Self.path(dataDirectory: dataDirectory)
        let opened = try await executor.run { () throws(SQLiteError) -> Opened in try Self.open(path: path) }
        self.executor = executor
        self.dataDirectory = dataDirectory
        self.pseudonymDirectory = pseudonymDirectory ?? dataDirectory
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
        if try userVersion(connection) < hashedDeliveriesVersion {
            try hashDeliveredRegistrations(connection)
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

    private static func userVersion(_ connection: SQLiteConnection) throws(SQLiteError) -> Int64 {
        let statement = try connection.prepare("PRAGMA user_version")
        defer { statement.finalize() }
        _ = try statement.step()
        return statement.int64(0)
    }

    /// Replaces the tokens and fingerprints of a store written before they were hashed by their
    /// hashes, in one transaction (then the file is vacuumed, so the old pages go too).
    private static func hashDeliveredRegistrations(_ connection: SQLiteConnection) throws(SQLiteError) {
        let hashed = try connection.transaction { () throws(SQLiteError) -> Int in
            let read = try connection.prepare(
                "SELECT tenant, platform, integration_key, registration_token, fingerprint, delivered_at FROM delivered_registrations")
            var rows: [(String, String, String, String, String, String)] = []
            while try read.step() {
                let token = read.text(3) ?? ""
                rows.append(
                    (
                        read.text(0) ?? "", read.text(1) ?? "", read.text(2) ?? "", tokenDigest(token),
                        fingerprintDigest(token: token, fingerprint: read.text(4) ?? ""), read.text(5) ?? ""
                    ))
            }
            read.finalize()
            try connection.execute("DELETE FROM delivered_registrations")
            let insert = try connection.prepare(
                "INSERT OR REPLACE INTO delivered_registrations (tenant, platform, integration_key, registration_token, fingerprint, delivered_at) VALUES (?, ?, ?, ?, ?, ?)"
            )
            defer { insert.finalize() }
            for row in rows {
                insert.reset()
                try insert.bind(1, row.0)
                try insert.bind(2, row.1)
                try insert.bind(3, row.2)
                try insert.bind(4, row.3)
                try insert.bind(5, row.4)
                try insert.bind(6, row.5)
                try insert.step()
            }
            try connection.execute("PRAGMA user_version = \(hashedDeliveriesVersion)")
            return rows.count
        }
        // A new store had nothing to hash: no old page to give back.
        // The checkpoint then writes the vacuumed file over the old one and empties the journal.
        if hashed > 0 {
            try connection.execute("VACUUM")
            try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    private static func hasColumn(_ column: String, of table: String, _ connection: SQLiteConnection) throws(SQLiteError) -> Bool {
        let statement = try connection.prepare("SELECT count(*) FROM pragma_table_info('\(table)') WHERE name = '\(column)'")
        defer { statement.finalize() }
        _ = try statement.step()
        return statement.int64(0) > 0
    }

    /// Durably records an event given up on: `status` and `body` are the host's last answer (status
    /// 0 when there was none: `body` then says what failed), `reason` why the relay gave up.
    /// `stream` is the stream the event was read from when it is not this relay's own (one
    /// forwarded for a relay that stopped); it only matters with a ``DeadLetterTable``.
    ///
    /// With keys, the event, the URL and the answer are sealed (``SealedText``).
    public func deadLetter(
        sequence: UInt64, event: Event, url: String, status: Int, body: String, reason: String, stream: String? = nil
    ) async throws(ForwardingStoreError) {
        let values = DeadLetterValues(
            id: 0, eventJSON: try seal(EventEncoder.json(event), .eventJSON), url: try seal(url, .url), responseBody: try seal(body, .responseBody))
        let letter = StoredDeadLetter(
            id: 0, sequence: sequence, tenant: event.tenant.storedName, values: values, status: status, reason: reason,
            deadLetteredAt: EventTime.now().rfc3339)
        if let table {
            do {
                try await table.insert(letter, stream: stream)
            } catch {
                throw .table(error)
            }
            return
        }
        do {
            insertDeadLetter.reset()
            try insertDeadLetter.bind(1, Int64(bitPattern: letter.sequence))
            try insertDeadLetter.bind(2, values.eventJSON)
            try insertDeadLetter.bind(3, values.url)
            try insertDeadLetter.bind(4, Int64(letter.status))
            try insertDeadLetter.bind(5, values.responseBody)
            try insertDeadLetter.bind(6, letter.deadLetteredAt)
            try insertDeadLetter.bind(7, letter.reason)
            try insertDeadLetter.bind(8, letter.tenant)
            try insertDeadLetter.step()
        } catch {
            throw .database(error)
        }
    }

    /// The dead-letter columns whose values are sealed; a value's column is its sealing context.
    enum SealedColumn: String, CaseIterable {
        case eventJSON = "event_json"
        case url
        case responseBody = "response_body"
    }

    /// `value` sealed for `column` with the newest key; as it is without keys.
    func seal(_ value: String, _ column: SealedColumn) throws(ForwardingStoreError) -> String {
        guard let keys else { return value }
        do {
            return try SealedText.seal(value, context: column.rawValue, keys: keys)
        } catch {
            throw .sealed(error, letter: nil)
        }
    }

    /// `value` of `column` of dead letter `letter`, opened (as it is when in the clear).
    func open(_ value: String, _ column: SealedColumn, letter: Int64) throws(ForwardingStoreError) -> String {
        do {
            return try SealedText.unseal(value, context: column.rawValue, keys: keys)
        } catch {
            throw .sealed(error, letter: letter)
        }
    }

    /// Dead letters of `tenant`, oldest first; re-queued ones too when `includeRequeued`.
    ///
    /// - Throws: ``ForwardingStoreError/sealed(_:letter:)`` for a sealed letter the store's keys
    ///   do not open (naming the key it needs).
    public func deadLetters(tenant: TenantSelection = .all, includeRequeued: Bool = false, limit: Int? = nil) async throws(ForwardingStoreError)
        -> [DeadLetter]
    {
        let stored = try await storedDeadLetters(tenant: tenant.storedName, includeRequeued: includeRequeued, limit: limit)
        var letters: [DeadLetter] = []
        letters.reserveCapacity(stored.count)
        for letter in stored {
            let id = letter.id
            letters.append(
                DeadLetter(
                    id: id, sequence: letter.sequence, eventJSON: try open(letter.values.eventJSON, .eventJSON, letter: id),
                    url: try open(letter.values.url, .url, letter: id), status: letter.status,
                    responseBody: try open(letter.values.responseBody, .responseBody, letter: id), deadLetteredAt: letter.deadLetteredAt,
                    requeued: letter.requeuedAt.map { ($0, letter.requeuedSequence ?? 0) }, reason: letter.reason,
                    tenant: TenantName.displayName(stored: letter.tenant)))
        }
        return letters
    }

    /// The letters as stored (sealed values not opened), from the table or the file.
    func storedDeadLetters(tenant: String?, includeRequeued: Bool, limit: Int?) async throws(ForwardingStoreError) -> [StoredDeadLetter] {
        if let table {
            do {
                return try await table.letters(tenant: tenant, includeRequeued: includeRequeued, limit: limit)
            } catch {
                throw .table(error)
            }
        }
        do throws(SQLiteError) {
            var sql =
                "SELECT id, sequence, event_json, url, status, response_body, dead_lettered_at, requeued_at, requeued_sequence, reason, tenant FROM dead_letters WHERE (?1 IS NULL OR tenant = ?1)"
            if !includeRequeued { sql += " AND requeued_at IS NULL" }
            sql += " ORDER BY id"
            if let limit { sql += " LIMIT \(max(0, limit))" }
            let statement = try connection.prepare(sql)
            defer { statement.finalize() }
            if let tenant { try statement.bind(1, tenant) }
            var letters: [StoredDeadLetter] = []
            while try statement.step() {
                let id = statement.int64(0)
                let requeuedAt = statement.text(7)
                letters.append(
                    StoredDeadLetter(
                        id: id, sequence: UInt64(bitPattern: statement.int64(1)), tenant: statement.text(10) ?? "",
                        values: DeadLetterValues(
                            id: id, eventJSON: statement.text(2) ?? "", url: statement.text(3) ?? "", responseBody: statement.text(5) ?? ""),
                        status: Int(statement.int64(4)), reason: statement.text(9) ?? "", deadLetteredAt: statement.text(6) ?? "",
                        requeuedAt: requeuedAt, requeuedSequence: requeuedAt.map { _ in UInt64(bitPattern: statement.int64(8)) }))
            }
            return letters
        } catch {
            throw .database(error)
        }
    }

    /// Marks dead letter `id` as re-queued (appended to the log again as `sequence`).
    ///
    /// - Throws: ``ForwardingStoreError/noSuchLetter(_:)`` when there is no letter `id`.
    public func markRequeued(id: Int64, sequence: UInt64) async throws(ForwardingStoreError) {
        let at = EventTime.now().rfc3339
        if let table {
            let marked: Bool
            do {
                marked = try await table.markRequeued(id: id, at: at, sequence: sequence)
            } catch {
                throw .table(error)
            }
            if !marked { throw .noSuchLetter(id) }
            return
        }
        let changed: Int32
        do throws(SQLiteError) {
            let statement = try connection.prepare("UPDATE dead_letters SET requeued_at = ?, requeued_sequence = ? WHERE id = ?")
            defer { statement.finalize() }
            try statement.bind(1, at)
            try statement.bind(2, Int64(bitPattern: sequence))
            try statement.bind(3, id)
            try statement.step()
            changed = connection.changes
        } catch {
            throw .database(error)
        }
        if changed == 0 { throw .noSuchLetter(id) }
    }

    /// The keyed hashes that stand for personal data where dead letters are shown
    /// (`<data-dir>/pseudonym.key`, made the first time, on the store's thread).
    ///
    /// - Throws: ``Pseudonymizer/KeyFileError`` when the key file cannot be read or written.
    public func pseudonymizer() throws(Pseudonymizer.KeyFileError) -> Pseudonymizer {
        if let loadedPseudonymizer { return loadedPseudonymizer }
        let loaded = try Pseudonymizer.load(dataDirectory: pseudonymDirectory)
        loadedPseudonymizer = loaded
        return loaded
    }

    /// Dead letters of `tenant` not re-queued.
    public func pendingDeadLetterCount(tenant: TenantSelection = .all) async throws(ForwardingStoreError) -> Int {
        let counts = try await pendingDeadLetterCountsByTenant()
        guard let stored = tenant.storedName else { return counts.values.reduce(0, +) }
        return counts[stored] ?? 0
    }

    /// Dead letters not re-queued, by tenant (`''`: the default tenant); a tenant with none is absent.
    public func pendingDeadLetterCountsByTenant() async throws(ForwardingStoreError) -> [String: Int] {
        if let table {
            do {
                return try await table.pendingCountsByTenant()
            } catch {
                throw .table(error)
            }
        }
        do throws(SQLiteError) {
            let statement = try connection.prepare("SELECT tenant, count(*) FROM dead_letters WHERE requeued_at IS NULL GROUP BY tenant")
            defer { statement.finalize() }
            var counts: [String: Int] = [:]
            while try statement.step() { counts[statement.text(0) ?? ""] = Int(statement.int64(1)) }
            return counts
        } catch {
            throw .database(error)
        }
    }
}

import CampaignProtocol
import RelayCore
import RelayEventJSON
import RelaySQLite

/// The baseline: events in an SQLite table, as an SDK-style persistent queue keeps them — WAL
/// journal mode, `synchronous=FULL` (every commit durable), one transaction per batch.
public final class SQLiteEventQueue {
    let connection: SQLiteConnection
    let insert: SQLiteStatement
    /// The database file.
    public let path: String
    /// Events appended since the queue was opened.
    public private(set) var appendedEvents = 0

    /// Opens (creating) the queue database at `path`.
    public init(path: String) throws(SQLiteError) {
        self.path = path
        connection = try SQLiteConnection(path: path, walWithSynchronous: .full)
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS events (
                seq INTEGER PRIMARY KEY, kind INTEGER NOT NULL, action INTEGER, message_id TEXT, delivery_id TEXT,
                integration_key TEXT, time_ns INTEGER NOT NULL, body TEXT)
            """
        )
        insert = try connection.prepare(
            "INSERT INTO events (kind, action, message_id, delivery_id, integration_key, time_ns, body) VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
    }

    /// Inserts `events` in one durable transaction.
    public func append(_ events: [Event]) throws(SQLiteError) {
        try connection.transaction { () throws(SQLiteError) in
            for event in events {
                insert.reset()
                switch event {
                case .tracking(let hit):
                    try insert.bind(1, Int64(1))
                    try insert.bind(2, Int64(hit.action.wireTag.rawValue))
                    try insert.bind(3, hit.messageId.text)
                    try insert.bind(4, hit.deliveryId)
                    if let key = hit.integrationKey { try insert.bind(5, key) } else { try insert.bindNull(5) }
                    try insert.bind(6, hit.time.nanosecondsSinceEpoch)
                    try insert.bindNull(7)
                case .registration(let registration):
                    try insert.bind(1, Int64(2))
                    try insert.bind(6, registration.time.nanosecondsSinceEpoch)
                    try insert.bind(7, EventEncoder.json(event))
                case .erased(let entry):
                    // No benchmark appends one; stored as its JSON, a kind of its own.
                    try insert.bind(1, Int64(3))
                    try insert.bind(6, entry.time.nanosecondsSinceEpoch)
                    try insert.bind(7, EventEncoder.json(event))
                }
                try insert.step()
            }
        }
        appendedEvents += events.count
    }

    /// Moves the WAL into the database file so its size can be measured.
    public func checkpoint() throws(SQLiteError) {
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }
}

import RelayAggregates
import RelayCore
import RelaySQLite

/// The distinct messages of every delivery action, behind the unique counts: integer ids in
/// ``MessageChunk``s (`delivery_message_chunks`), UUIDs as 16 bytes (`delivery_message_uuids`).
///
/// Used inside the aggregator's transaction: what it adds commits, or rolls back, with the counts.
final class MessageSets {
    private let path: String
    private let readChunk: SQLiteStatement
    private let writeChunk: SQLiteStatement
    private let insertUUID: SQLiteStatement
    private let connection: SQLiteConnection

    /// Prepares the statements on `connection`, whose database is at `path`.
    init(connection: SQLiteConnection, path: String) throws(SQLiteError) {
        self.connection = connection
        self.path = path
        readChunk = try connection.prepare("SELECT members FROM delivery_message_chunks WHERE delivery_action = ? AND chunk = ?")
        writeChunk = try connection.prepare(
            """
            INSERT INTO delivery_message_chunks (delivery_action, chunk, members) VALUES (?, ?, ?)
            ON CONFLICT (delivery_action, chunk) DO UPDATE SET members = excluded.members
            """)
        insertUUID = try connection.prepare("INSERT OR IGNORE INTO delivery_message_uuids (delivery_action, message_uuid) VALUES (?, ?)")
    }

    /// Adds every sighting of `deltas` (whose deliveries have the row ids `references`) and returns
    /// the uniques each delivery gains, by index in ``CountDeltas/deliveries``, one per set
    /// (``MetricTable/deliverySets``).
    ///
    /// - Throws: ``AggregatorError/database(_:)`` when SQLite fails,
    ///   ``AggregatorError/unreadableDatabase(path:_:)`` when a stored chunk is damaged.
    func add(_ deltas: CountDeltas, references: [Int64]) throws(AggregatorError) -> [[Int64]] {
        var uniques = [[Int64]](repeating: Array(repeating: 0, count: deltas.table.deliverySets.count), count: deltas.deliveries.count)
        let messages = deltas.messages
        var lows: [UInt16] = []
        var index = messages.startIndex
        // Sightings come sorted by delivery, action and key, so the integer ids of one chunk are
        // next to each other, ascending (a chunk never straddles the sign of an Int64).
        while index < messages.endIndex {
            let sighting = messages[index]
            let deliveryAction = CountDeltas.deliveryAction(reference: references[sighting.delivery], action: sighting.action)
            switch sighting.key {
            case .uuid(let text):
                if try add(uuid: text, to: deliveryAction) { uniques[sighting.delivery][sighting.action] += 1 }
                index += 1
            case .integer(let value):
                let chunk = MessageChunk.chunkKey(of: value)
                lows.removeAll(keepingCapacity: true)
                var end = index
                while end < messages.endIndex, messages[end].delivery == sighting.delivery, messages[end].action == sighting.action,
                    case .integer(let next) = messages[end].key, MessageChunk.chunkKey(of: next) == chunk
                {
                    lows.append(MessageChunk.low(of: next))
                    end += 1
                }
                uniques[sighting.delivery][sighting.action] += Int64(try add(lows, to: deliveryAction, chunk: chunk))
                index = end
            }
        }
        return uniques
    }

    /// Adds the ascending `lows` to a chunk; returns how many were new.
    private func add(_ lows: [UInt16], to deliveryAction: Int64, chunk key: Int64) throws(AggregatorError) -> Int {
        var chunk = try read(deliveryAction: deliveryAction, chunk: key)
        let added = chunk.insert(ascending: lows)
        if added > 0 { try write(chunk, deliveryAction: deliveryAction, chunk: key) }
        return added
    }

    /// The stored chunk, or an empty one.
    func read(deliveryAction: Int64, chunk key: Int64) throws(AggregatorError) -> MessageChunk {
        readChunk.reset()
        defer { readChunk.reset() }
        let encoded: [UInt8]
        do {
            try readChunk.bind(1, deliveryAction)
            try readChunk.bind(2, key)
            guard try readChunk.step() else { return MessageChunk() }
            encoded = readChunk.blob(0)
        } catch {
            throw .database(error)
        }
        do {
            return try MessageChunk(encoded: encoded)
        } catch {
            throw .unreadableDatabase(
                path: path,
                SQLiteError(
                    code: 11, message: "delivery_message_chunks row (\(deliveryAction), \(key)) is damaged: \(error.reason)",
                    context: "delivery_message_chunks"))
        }
    }

    /// Stores `chunk` in place of what the row held.
    func write(_ chunk: MessageChunk, deliveryAction: Int64, chunk key: Int64) throws(AggregatorError) {
        writeChunk.reset()
        do {
            try writeChunk.bind(1, deliveryAction)
            try writeChunk.bind(2, key)
            try writeChunk.bind(3, blob: chunk.encoded)
            try writeChunk.step()
        } catch {
            throw .database(error)
        }
    }

    /// Adds a UUID (given as text); `true` when it was new.
    func add(uuid text: String, to deliveryAction: Int64) throws(AggregatorError) -> Bool {
        guard let bytes = Self.uuidBytes(text) else {
            // Every UUID the log holds passed MessageID's check; text that is not one is a defect upstream.
            throw .database(SQLiteError(code: 20, message: "message id \(text) is not a UUID", context: "delivery_message_uuids"))
        }
        insertUUID.reset()
        do {
            try insertUUID.bind(1, deliveryAction)
            try insertUUID.bind(2, blob: bytes)
            try insertUUID.step()
        } catch {
            throw .database(error)
        }
        return connection.changes > 0
    }

    /// The 16 bytes of a UUID in textual order, or `nil` when `text` is not one.
    static func uuidBytes(_ text: String) -> [UInt8]? {
        guard case .some(.uuid(let (high, low), _)) = MessageID.parseUUID(text) else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(16)
        for word in [high, low] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return bytes
    }

    /// Releases the statements (before the connection closes).
    func finalize() {
        for statement in [readChunk, writeChunk, insertUUID] { statement.finalize() }
    }
}

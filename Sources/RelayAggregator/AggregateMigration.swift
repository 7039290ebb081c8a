import RelaySQLite

/// Brings an aggregates database written by an earlier relay to ``AggregateSchema/version`` in place,
/// exactly: nothing is counted again and nothing is lost, so the log need not hold its events any more.
///
/// - Version 1 predates relay chains: no event it counted came from another relay, so the empty
///   `relay_origins` that ``AggregateSchema/create`` adds is exact.
/// - Versions 1 and 2 keep the distinct messages as one row each in `delivery_messages` (about 13
///   bytes a message on disk); version 3 keeps integer ids in ``MessageChunk``s and UUIDs as 16
///   bytes. Every row is carried over, in key order, then the old table is dropped.
enum AggregateMigration {
    /// What a migration did.
    struct Summary {
        /// The version the database had.
        var from: Int64
        /// Distinct messages carried over.
        var messages: Int
    }

    /// Migrates the database of `connection` (at `path`) from `version`, inside the caller's
    /// transaction, after ``AggregateSchema/create`` ran; `nil` when it already is current.
    ///
    /// - Throws: ``AggregatorError/database(_:)`` when SQLite fails (the caller rolls back, and the
    ///   file keeps its old version), ``AggregatorError/schemaMismatch(path:found:expected:)`` for a
    ///   version this relay does not know how to bring up.
    static func migrate(_ connection: SQLiteConnection, path: String, from version: Int64) throws(AggregatorError) -> Summary? {
        guard version != AggregateSchema.version else { return nil }
        guard version == 1 || version == 2 else {
            throw .schemaMismatch(path: path, found: version, expected: AggregateSchema.version)
        }
        let sets: MessageSets
        do { sets = try MessageSets(connection: connection, path: path) } catch { throw .database(error) }
        defer { sets.finalize() }
        var messages = 0
        do {
            let rows = try connection.prepare("SELECT delivery_action, message_key FROM delivery_messages ORDER BY delivery_action, message_key")
            defer { rows.finalize() }
            // SQLite orders integers before text, and integers by value: each chunk's ids come
            // together, ascending.
            var current: (deliveryAction: Int64, chunk: Int64)?
            var lows: [UInt16] = []
            func flush() throws(AggregatorError) {
                guard let (deliveryAction, key) = current, !lows.isEmpty else { return }
                var chunk = MessageChunk()
                _ = chunk.insert(ascending: lows)
                try sets.write(chunk, deliveryAction: deliveryAction, chunk: key)
                lows.removeAll(keepingCapacity: true)
            }
            while try rows.step() {
                messages += 1
                let deliveryAction = rows.int64(0)
                if rows.isInteger(1) {
                    let value = rows.int64(1)
                    let key = (deliveryAction, MessageChunk.chunkKey(of: value))
                    if let current, current != key { try flush() }
                    current = key
                    lows.append(MessageChunk.low(of: value))
                } else {
                    try flush()
                    current = nil
                    let text = rows.text(1) ?? ""
                    _ = try sets.add(uuid: text, to: deliveryAction)
                }
            }
            try flush()
            try connection.execute("DROP TABLE delivery_messages")
            try connection.execute("UPDATE aggregator_state SET schema_version = \(AggregateSchema.version) WHERE id = 1")
        } catch let error as AggregatorError {
            throw error
        } catch let error as SQLiteError {
            throw .database(error)
        } catch {
            throw .database(SQLiteError(code: 1, message: "\(error)", context: path))
        }
        return Summary(from: version, messages: messages)
    }
}

import Logging
import RelayAggregates
import RelayCore
import RelaySQLite

/// The aggregates database, written by one ``Aggregator``: counts and the log position they
/// cover, always changed together in one transaction, so a crash at any point neither loses nor
/// double-counts an event.
///
/// Its columns, upserts and migrations come from its ``MetricTable`` (``AggregateBackend``).
final class AggregateStore: AggregateBackend {
    let path: String
    let connection: SQLiteConnection
    /// The metrics it counts.
    let table: MetricTable
    private let messageSets: MessageSets
    private let insertToken: SQLiteStatement
    private let findDelivery: SQLiteStatement
    private let insertDelivery: SQLiteStatement
    private let addToDelivery: SQLiteStatement
    private let upsertRegistration: SQLiteStatement
    private let upsertOrigin: SQLiteStatement
    private let readState: SQLiteStatement
    private let writePosition: SQLiteStatement
    let insertErased: SQLiteStatement
    /// `deliveries.delivery_ref` by tenant and delivery id; only holds refs of committed rows.
    private var deliveryRefs: [CountDeltas.DeliveryKey: Int64] = [:]

    /// Opens (creating if needed) the database at `path`, counting the metrics of `table`; a new
    /// database starts at `firstSequence`. Its page cache holds up to `pageCacheBytes`. A database
    /// of an earlier schema version, or without a column of `table`, is migrated in place
    /// (``AggregateMigration``), which `logger` reports.
    init(
        path: String, firstSequence: UInt64, table: MetricTable = .standard, pageCacheBytes: Int = Aggregator.defaultPageCacheBytes,
        logger: Logger? = nil
    ) throws(AggregatorError) {
        self.path = path
        self.table = table
        do {
            // Exactness comes from atomic transactions, not from syncing each one: a transaction lost
            // to power failure takes its position with it and is simply aggregated again.
            let opened = try SQLiteConnection(path: path, walWithSynchronous: .normal)
            connection = opened
            // A negative cache_size is in KiB.
            try opened.execute("PRAGMA cache_size=-\(max(1, pageCacheBytes >> 10))")
            // One transaction: a failure while creating (a full disk, an I/O error) leaves no tables
            // without their state row, which every later reader would take for a damaged file.
            try opened.transaction { () throws(SQLiteError) in
                try opened.execute(AggregateSchema.create)
                try opened.execute(
                    "INSERT OR IGNORE INTO aggregator_state (id, schema_version, next_sequence, first_sequence, updated_at) VALUES (1, \(AggregateSchema.version), \(firstSequence), \(firstSequence), '\(EventTime.now().rfc3339)')"
                )
            }
            // Statements are prepared against the current tables: an earlier version's are
            // migrated first (`create` above left them as they were).
            let version = try AggregateSchema.storedVersion(opened, path: path)
            let steps = try AggregateMigration.pending(opened, path: path, from: version, table: table)
            if !steps.isEmpty {
                try Self.migrate(opened, path: path, from: version, steps: steps, logger: logger)
            }
            messageSets = try MessageSets(connection: opened, path: path)
            insertToken = try connection.prepare(
                "INSERT OR IGNORE INTO registration_tokens (tenant, integration_key, platform, registration_token) VALUES (?, ?, ?, ?)")
            findDelivery = try connection.prepare("SELECT delivery_ref FROM deliveries WHERE tenant = ? AND delivery_id = ?")
            insertDelivery = try connection.prepare(AggregateSchema.insertDelivery(table))
            addToDelivery = try connection.prepare(AggregateSchema.addToDelivery(table))
            upsertRegistration = try connection.prepare(AggregateSchema.upsertRegistration(table))
            upsertOrigin = try connection.prepare(AggregateSchema.upsertOrigin)
            readState = try connection.prepare("SELECT schema_version, next_sequence, first_sequence FROM aggregator_state WHERE id = 1")
            writePosition = try connection.prepare("UPDATE aggregator_state SET next_sequence = ?, updated_at = ? WHERE id = 1")
            insertErased = try connection.prepare("INSERT OR IGNORE INTO erased_registrations (sequence) VALUES (?)")
        } catch let error as AggregatorError {
            throw error
        } catch let error as SQLiteError {
            throw Self.openingFailure(path: path, error)
        } catch {
            throw .database(SQLiteError(code: 1, message: "\(error)", context: path))
        }
    }

    /// The names of its migrations, in order (``AggregateMigration/steps(_:)``).
    var migrationNames: [String] { AggregateMigration.steps(table).map(\.name) }

    /// Runs the migrations the database lacks (the store ran them when it opened; this finds none
    /// left then).
    func migrate() throws(AggregatorError) {
        let version = try AggregateSchema.storedVersion(connection, path: path)
        let steps = try AggregateMigration.pending(connection, path: path, from: version, table: table)
        guard !steps.isEmpty else { return }
        do throws(AggregatorError) {
            do { try connection.execute("BEGIN IMMEDIATE") } catch { throw AggregatorError.database(error) }
            _ = try AggregateMigration.migrate(connection, path: path, from: version, steps: steps)
            do { try connection.execute("COMMIT") } catch { throw AggregatorError.database(error) }
        } catch {
            rollBack()
            throw error
        }
    }

    /// Runs `steps` in one transaction, then (when the schema's version changed) gives the old
    /// tables' pages back to the file system. On failure the connection is closed.
    private static func migrate(_ connection: SQLiteConnection, path: String, from version: Int64, steps: [AggregateMigration.Step], logger: Logger?)
        throws(AggregatorError)
    {
        guard steps.contains(where: { $0.version != nil }) else {
            try addMetricColumns(connection, path: path, from: version, steps: steps, logger: logger)
            return
        }
        logger?.notice(
            "bringing the aggregates database to the current schema; this copies every delivery and registration once",
            metadata: ["path": "\(path)", "from": "\(version)", "to": "\(AggregateSchema.version)"])
        let started = SystemClock.monotonicNanoseconds()
        let summary = try inOneTransaction(connection) { () throws(AggregatorError) in
            try AggregateMigration.migrate(connection, path: path, from: version, steps: steps)
        }
        // VACUUM needs room for a copy of the file; without it the freed pages are reused by later
        // counts instead, which is only a larger file.
        do {
            try connection.execute("VACUUM")
        } catch {
            logger?.warning("could not compact the migrated aggregates database; it works as it is", metadata: ["error": "\(error)"])
        }
        logger?.notice(
            "aggregates database migrated",
            metadata: [
                "path": "\(path)", "from": "\(summary.from)", "to": "\(AggregateSchema.version)", "messages": "\(summary.messages)",
                "deliveries": "\(summary.deliveries)",
                "took": "\(Duration.nanoseconds(SystemClock.monotonicNanoseconds() - started).humanText)",
            ])
    }

    /// Adds the columns of metrics the database lacks, in one transaction: a quick change (no row
    /// is copied), so the file is not compacted. On failure the connection is closed.
    private static func addMetricColumns(
        _ connection: SQLiteConnection, path: String, from version: Int64, steps: [AggregateMigration.Step], logger: Logger?
    ) throws(AggregatorError) {
        _ = try inOneTransaction(connection) { () throws(AggregatorError) in
            try AggregateMigration.migrate(connection, path: path, from: version, steps: steps)
        }
        logger?.notice(
            "added the columns of new metrics to the aggregates database", metadata: ["path": "\(path)", "migrations": "\(steps.map(\.name))"])
    }

    /// Runs `body` (migration steps) in one immediate transaction of `connection`, rolled back
    /// when it throws. On failure the connection is closed: the store is not opened.
    private static func inOneTransaction<Value>(
        _ connection: SQLiteConnection, _ body: () throws(AggregatorError) -> Value
    ) throws(AggregatorError) -> Value {
        do throws(AggregatorError) {
            do { try connection.execute("BEGIN IMMEDIATE") } catch { throw AggregatorError.database(error) }
            do throws(AggregatorError) {
                let value = try body()
                do { try connection.execute("COMMIT") } catch { throw AggregatorError.database(error) }
                return value
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        } catch {
            connection.close()
            throw error
        }
    }

    /// SQLite's primary result codes that say the disk or the moment failed, not the file: full,
    /// I/O error, cannot open, read-only, busy, locked, out of memory.
    static let transientCodes: Set<Int32> = [13, 10, 14, 8, 5, 6, 7]

    /// What a failure to open or create the database means: a failing disk (full, I/O error) is a
    /// database error to fix and retry, never a damaged file that would need a rebuild.
    static func openingFailure(path: String, _ error: SQLiteError) -> AggregatorError {
        transientCodes.contains(error.code & 0xff) ? .database(error) : .unreadableDatabase(path: path, error)
    }

    struct State {
        var schemaVersion: Int64
        var nextSequence: UInt64
        var firstSequence: UInt64
    }

    func state() throws(AggregatorError) -> State {
        readState.reset()
        let hasRow: Bool
        do { hasRow = try readState.step() } catch { throw .unreadableDatabase(path: path, error) }
        guard hasRow else { throw .unreadableDatabase(path: path, SQLiteError(code: 1, message: "aggregator_state has no row", context: path)) }
        defer { readState.reset() }
        return State(
            schemaVersion: readState.int64(0), nextSequence: UInt64(bitPattern: readState.int64(1)),
            firstSequence: UInt64(bitPattern: readState.int64(2))
        )
    }

    /// Counts `deltas` (of the events that continue the log exactly at the stored position) and
    /// moves the position to `end`, in one transaction.
    func apply(_ deltas: CountDeltas, from start: UInt64, to end: UInt64) throws(AggregatorError) {
        do { try connection.execute("BEGIN IMMEDIATE") } catch { throw .database(error) }
        let stored: UInt64
        do {
            stored = try state().nextSequence
        } catch {
            rollBack()
            throw error
        }
        guard stored == start else {
            rollBack()
            throw .positionMoved(expected: start, found: stored)
        }
        var created: [CountDeltas.DeliveryKey: Int64] = [:]
        do throws(AggregatorError) {
            try count(deltas, created: &created)
            do throws(SQLiteError) {
                writePosition.reset()
                try writePosition.bind(1, Int64(bitPattern: end))
                try writePosition.bind(2, EventTime.now().rfc3339)
                try writePosition.step()
                try connection.execute("COMMIT")
            } catch {
                throw .database(error)
            }
        } catch {
            rollBack()
            throw error
        }
        deliveryRefs.merge(created) { old, _ in old }
    }

    func rollBack() {
        try? connection.execute("ROLLBACK")
    }

    /// Applies `deltas` to the tables.
    private func count(_ deltas: CountDeltas, created: inout [CountDeltas.DeliveryKey: Int64]) throws(AggregatorError) {
        var references: [Int64] = []
        references.reserveCapacity(deltas.deliveries.count)
        do throws(SQLiteError) {
            for delivery in deltas.deliveries {
                references.append(try deliveryRef(delivery.key, time: delivery.first, created: &created))
            }
        } catch {
            throw .database(error)
        }
        let uniques = try messageSets.add(deltas, references: references)
        do throws(SQLiteError) {
            try addCounts(deltas, references: references, uniques: uniques)
        } catch {
            throw .database(error)
        }
    }

    /// Adds the totals and `uniques` of `deltas` to the deliveries' rows, and counts registrations
    /// and origins.
    private func addCounts(_ deltas: CountDeltas, references: [Int64], uniques: [[Int64]]) throws(SQLiteError) {
        let deliveryColumns = Int32(table.perDelivery.count)
        for (index, delivery) in deltas.deliveries.enumerated() {
            addToDelivery.reset()
            try addToDelivery.bind(1, references[index])
            for (column, value) in deltas.deliveryValues(index, uniques: uniques[index]).enumerated() {
                try addToDelivery.bind(Int32(2 + column), value)
            }
            try addToDelivery.bind(deliveryColumns + 2, delivery.first)
            try addToDelivery.bind(deliveryColumns + 3, delivery.last)
            try addToDelivery.step()
        }
        var newTokenApps: [Int] = []
        for sighting in deltas.tokens {
            let app = deltas.registrations[sighting.app].app
            insertToken.reset()
            try insertToken.bind(1, app.tenant)
            try insertToken.bind(2, app.integrationKey)
            try insertToken.bind(3, app.platform)
            try insertToken.bind(4, sighting.token)
            try insertToken.step()
            if connection.changes > 0 { newTokenApps.append(sighting.app) }
        }
        let distinctTokens = deltas.distinctTokens(newTokenApps: newTokenApps)
        for (index, delta) in deltas.registrations.enumerated() {
            upsertRegistration.reset()
            try upsertRegistration.bind(1, delta.app.tenant)
            try upsertRegistration.bind(2, delta.app.integrationKey)
            try upsertRegistration.bind(3, delta.app.platform)
            let values = deltas.appValues(index, distinctTokens: distinctTokens[index])
            for (column, value) in values.enumerated() { try upsertRegistration.bind(Int32(4 + column), value) }
            try upsertRegistration.bind(Int32(4 + values.count), delta.first)
            try upsertRegistration.bind(Int32(5 + values.count), delta.last)
            try upsertRegistration.step()
        }
        for sequence in deltas.erasedSequences {
            insertErased.reset()
            try insertErased.bind(1, Int64(bitPattern: sequence))
            try insertErased.step()
        }
        for origin in deltas.origins {
            upsertOrigin.reset()
            try upsertOrigin.bind(1, origin.key.relayID)
            try upsertOrigin.bind(2, origin.key.via)
            try upsertOrigin.bind(3, origin.events)
            try upsertOrigin.bind(4, origin.hits)
            try upsertOrigin.bind(5, origin.registrations)
            try upsertOrigin.bind(6, Int64(origin.epoch))
            try upsertOrigin.bind(7, Int64(bitPattern: origin.lastSequence))
            try upsertOrigin.bind(8, origin.first)
            try upsertOrigin.bind(9, origin.last)
            try upsertOrigin.step()
        }
    }

    /// The row of a delivery, created (with zero counts) inside the current transaction when new.
    private func deliveryRef(_ key: CountDeltas.DeliveryKey, time: Int64, created: inout [CountDeltas.DeliveryKey: Int64]) throws(SQLiteError)
        -> Int64
    {
        if let known = deliveryRefs[key] ?? created[key] { return known }
        findDelivery.reset()
        try findDelivery.bind(1, key.tenant)
        try findDelivery.bind(2, key.deliveryId)
        if try findDelivery.step() {
            let reference = findDelivery.int64(0)
            findDelivery.reset()
            deliveryRefs[key] = reference
            return reference
        }
        findDelivery.reset()
        insertDelivery.reset()
        try insertDelivery.bind(1, key.tenant)
        try insertDelivery.bind(2, key.deliveryId)
        try insertDelivery.bind(3, time)
        try insertDelivery.bind(4, time)
        try insertDelivery.step()
        // Remembered only once the transaction commits: a rolled-back row id must not be reused.
        let reference = insertDelivery.lastInsertedRowID
        created[key] = reference
        return reference
    }

    /// Checkpoints and closes the database, so the file alone holds everything.
    func close() {
        messageSets.finalize()
        for statement in [
            insertToken, findDelivery, insertDelivery, addToDelivery, upsertRegistration, upsertOrigin, readState, writePosition, insertErased,
        ] {
            statement.finalize()
        }
        try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.close()
    }
}

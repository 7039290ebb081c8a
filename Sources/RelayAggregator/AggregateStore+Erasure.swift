public import RelayAggregates
import RelayCore
public import RelayLog
import RelaySQLite

/// What an erasure changed in the aggregates.
public struct AggregateErasure: Sendable, Hashable, Codable {
    /// Registrations taken out of the counts (they had been counted).
    public var registrationsUncounted = 0
    /// Registrations that had not been counted, and now never will be.
    public var registrationsNeverCounted = 0
    /// Token digests forgotten (rows of `registration_tokens`; each lowers its app's distinct tokens).
    public var tokensForgotten = 0

    /// Nothing changed.
    public init() {}
}

extension ErasedRegistration {
    /// What an erasure plan's `target` says of its registration.
    init(_ target: ErasurePlan.Target) {
        self.init(
            sequence: target.sequence,
            facts: RegistrationFacts(
                tenant: target.tenant, integrationKey: target.integrationKey, platform: target.platform, timeNanoseconds: target.timeNanoseconds,
                originRelayID: target.originRelayId), viaRelayID: target.viaRelayId, tokenDigest: target.tokenDigest, isCopy: target.isCopy)
    }
}

extension AggregateStore {
    /// Takes the registrations of `targets` out of the aggregates (``uncount(_:)``).
    func applyErasure(_ targets: [ErasurePlan.Target]) throws(AggregatorError) -> AggregateErasure {
        let uncounted = try uncount(targets.map(ErasedRegistration.init))
        var result = AggregateErasure()
        result.registrationsUncounted = uncounted.uncounted
        result.registrationsNeverCounted = uncounted.neverCounted
        result.tokensForgotten = uncounted.tokensForgotten
        return result
    }

    /// Takes `registrations` out of the aggregates, in one transaction.
    ///
    /// `erased_registrations` holds every registration the aggregates will never count: the ones an
    /// erasure took out, and the erased entries the aggregator met in the log (``CountDeltas``). A
    /// registration found there is done already (this erasure ran before, or the aggregator met it
    /// erased: not counted). Otherwise one between the database's first sequence and its position
    /// was counted: its app's value of every per-app total metric whose predicate it matches drops
    /// by one (``ErasedRegistration/totals(in:)``), and its origin's counts too; one at or after it
    /// was not, and is recorded so that it is not counted when the aggregator meets it. Each
    /// token digest row goes, and its app's distinct tokens drop by one per row removed.
    /// Idempotent: running it again changes nothing.
    ///
    /// The caller must keep the aggregator from counting meanwhile (``Aggregator/applyErasure(_:)``
    /// in a server; the log's lock without one).
    func uncount(_ registrations: [ErasedRegistration]) throws(AggregatorError) -> UncountedRegistrations {
        var result = UncountedRegistrations()
        do { try connection.execute("BEGIN IMMEDIATE") } catch { throw .database(error) }
        do throws(SQLiteError) {
            // What the database counted: from its first sequence (a database made on a trimmed log
            // never counted what came before) to its position.
            let counted: Range<UInt64>
            do {
                let current = try state()
                counted = current.firstSequence..<max(current.firstSequence, current.nextSequence)
            } catch {
                throw SQLiteError(code: 1, message: "\(error)", context: path)
            }
            let isErased = try connection.prepare("SELECT 1 FROM erased_registrations WHERE sequence = ?")
            // One statement per per-app total metric: each lowers its own column.
            var lowerTotal: [String: SQLiteStatement] = [:]
            for metric in table.appTotals {
                lowerTotal[metric.column] = try connection.prepare(
                    "UPDATE registrations SET \(metric.column) = \(metric.column) - 1 WHERE tenant = ? AND integration_key = ? AND platform = ? AND \(metric.column) > 0"
                )
            }
            let uncountOrigin = try connection.prepare(
                "UPDATE relay_origins SET events = events - 1, registrations = registrations - 1 WHERE relay_id = ? AND via_relay_id = ? AND registrations > 0"
            )
            let forgetToken = try connection.prepare(
                "DELETE FROM registration_tokens WHERE tenant = ? AND integration_key = ? AND platform = ? AND registration_token = ?")
            let tokens = table.appTokens?.column
            let lowerDistinct = try tokens.map { column throws(SQLiteError) in
                try connection.prepare(
                    "UPDATE registrations SET \(column) = \(column) - 1 WHERE tenant = ? AND integration_key = ? AND platform = ? AND \(column) > 0")
            }
            defer {
                for statement in [isErased, uncountOrigin, forgetToken] + Array(lowerTotal.values) + (lowerDistinct.map { [$0] } ?? []) {
                    statement.finalize()
                }
            }
            func bindApp(_ statement: SQLiteStatement, _ facts: RegistrationFacts) throws(SQLiteError) {
                statement.reset()
                try statement.bind(1, facts.tenant)
                try statement.bind(2, facts.integrationKey)
                try statement.bind(3, facts.platform)
            }
            for registration in registrations {
                isErased.reset()
                try isErased.bind(1, Int64(bitPattern: registration.sequence))
                if try isErased.step() { continue }
                if registration.isCopy {
                    // A copy was never counted (the entry it copies was, and is a target of its own).
                } else if counted.contains(registration.sequence) {
                    for metric in registration.totals(in: table) {
                        guard let statement = lowerTotal[metric.column] else { continue }
                        try bindApp(statement, registration.facts)
                        try statement.step()
                    }
                    if let origin = registration.facts.originRelayID {
                        uncountOrigin.reset()
                        try uncountOrigin.bind(1, origin)
                        try uncountOrigin.bind(2, registration.viaRelayID ?? "")
                        try uncountOrigin.step()
                    }
                    result.uncounted += 1
                } else {
                    result.neverCounted += 1
                }
                insertErased.reset()
                try insertErased.bind(1, Int64(bitPattern: registration.sequence))
                try insertErased.step()
            }
            for registration in registrations {
                try bindApp(forgetToken, registration.facts)
                try forgetToken.bind(4, registration.tokenDigest)
                try forgetToken.step()
                guard connection.changes > 0 else { continue }
                result.tokensForgotten += 1
                if let lowerDistinct {
                    try bindApp(lowerDistinct, registration.facts)
                    try lowerDistinct.step()
                }
            }
            try connection.execute("COMMIT")
        } catch {
            rollBack()
            throw .database(error)
        }
        return result
    }
}

extension Aggregator {
    /// Takes the registrations of `targets` out of the aggregates (see ``AggregateStore``'s
    /// `applyErasure`), between two of this aggregator's transactions, after `whileQuiescent`
    /// (which masks them in the log's readers: ``WriteAheadLog/erasureMask``, and may change the
    /// fleet's counts the same way) has run with no catch-up under way: every target read before
    /// was counted and is below the position, every one read after is an erased entry. Returns
    /// what changed, and what `whileQuiescent` returned.
    ///
    /// - Throws: what `whileQuiescent` throws (nothing changed here then), or
    ///   ``AggregatorError`` when the database cannot be changed.
    public func applyErasure<Value: Sendable>(
        _ targets: [ErasurePlan.Target], whileQuiescent: @Sendable () async throws -> Value
    ) async throws -> (AggregateErasure, Value) {
        await turns.take()
        defer { turns.end() }
        let value = try await whileQuiescent()
        return (try store.applyErasure(targets), value)
    }

    /// Takes the registrations of `targets` out of the aggregates database of `dataDirectory`, if
    /// there is one, in every metric of `table` (the table the relay counts with), with no
    /// aggregator running (the caller holds the log's lock). It opens and writes a file: call it
    /// on a thread made for blocking calls.
    public static func applyErasure(
        _ targets: [ErasurePlan.Target], dataDirectory: String, table: MetricTable = .standard
    ) throws(AggregatorError) -> AggregateErasure? {
        let path = databasePath(dataDirectory: dataDirectory)
        guard PosixFileSystem().exists(path) else { return nil }
        let store = try AggregateStore(path: path, firstSequence: 1, table: table, pageCacheBytes: 8 << 20)
        defer { store.close() }
        return try store.applyErasure(targets)
    }
}

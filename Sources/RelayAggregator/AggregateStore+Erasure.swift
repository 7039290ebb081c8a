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

extension AggregateStore {
    /// Takes the registrations of `targets` out of the aggregates, in one transaction.
    ///
    /// `erased_registrations` holds every registration the aggregates will never count: the ones an
    /// erasure took out, and the erased entries the aggregator met in the log (``CountDeltas``). A
    /// target found there is done already (this erasure ran before, or the aggregator met it
    /// erased: not counted). Otherwise one between the database's first sequence and its position was counted and its app's
    /// (and origin's) counts drop by one; one at or after it was not, and is recorded so that it
    /// is not counted when the aggregator meets it. Each target's token digest row goes, and its
    /// app's distinct tokens drop by one per row removed. Idempotent: running it again changes nothing.
    ///
    /// The caller must keep the aggregator from counting meanwhile (``Aggregator/applyErasure(_:)``
    /// in a server; the log's lock without one).
    func applyErasure(_ targets: [ErasurePlan.Target]) throws(AggregatorError) -> AggregateErasure {
        var result = AggregateErasure()
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
            let uncountRegistration = try connection.prepare(
                "UPDATE registrations SET registrations = registrations - 1 WHERE tenant = ? AND integration_key = ? AND platform = ? AND registrations > 0"
            )
            let uncountOrigin = try connection.prepare(
                "UPDATE relay_origins SET events = events - 1, registrations = registrations - 1 WHERE relay_id = ? AND via_relay_id = ? AND registrations > 0"
            )
            let forgetToken = try connection.prepare(
                "DELETE FROM registration_tokens WHERE tenant = ? AND integration_key = ? AND platform = ? AND registration_token = ?")
            let lowerDistinct = try connection.prepare(
                "UPDATE registrations SET distinct_tokens = distinct_tokens - 1 WHERE tenant = ? AND integration_key = ? AND platform = ? AND distinct_tokens > 0"
            )
            defer { for statement in [isErased, uncountRegistration, uncountOrigin, forgetToken, lowerDistinct] { statement.finalize() } }
            func bindApp(_ statement: SQLiteStatement, _ target: ErasurePlan.Target) throws(SQLiteError) {
                statement.reset()
                try statement.bind(1, target.tenant)
                try statement.bind(2, target.integrationKey)
                try statement.bind(3, target.platform)
            }
            for target in targets {
                isErased.reset()
                try isErased.bind(1, Int64(bitPattern: target.sequence))
                if try isErased.step() { continue }
                if target.isCopy {
                    // A copy was never counted (the entry it copies was, and is a target of its own).
                } else if counted.contains(target.sequence) {
                    try bindApp(uncountRegistration, target)
                    try uncountRegistration.step()
                    if let origin = target.originRelayId {
                        uncountOrigin.reset()
                        try uncountOrigin.bind(1, origin)
                        try uncountOrigin.bind(2, target.viaRelayId ?? "")
                        try uncountOrigin.step()
                    }
                    result.registrationsUncounted += 1
                } else {
                    result.registrationsNeverCounted += 1
                }
                insertErased.reset()
                try insertErased.bind(1, Int64(bitPattern: target.sequence))
                try insertErased.step()
            }
            for target in targets {
                try bindApp(forgetToken, target)
                try forgetToken.bind(4, target.tokenDigest)
                try forgetToken.step()
                guard connection.changes > 0 else { continue }
                result.tokensForgotten += 1
                try bindApp(lowerDistinct, target)
                try lowerDistinct.step()
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
    /// there is one, with no aggregator running (the caller holds the log's lock). It opens and
    /// writes a file: call it on a thread made for blocking calls.
    public static func applyErasure(_ targets: [ErasurePlan.Target], dataDirectory: String) throws(AggregatorError) -> AggregateErasure? {
        let path = databasePath(dataDirectory: dataDirectory)
        guard PosixFileSystem().exists(path) else { return nil }
        let store = try AggregateStore(path: path, firstSequence: 1, pageCacheBytes: 8 << 20)
        defer { store.close() }
        return try store.applyErasure(targets)
    }
}

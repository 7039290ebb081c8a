public import Logging
public import PostgresNIO
public import RelayLog

/// An erasure's change to the fleet's PostgreSQL (docs/privacy.md): one relay's registrations of a
/// person taken out of its counts, and their tokens' digests forgotten, in one transaction.
public enum FleetErasure {
    /// What changed.
    public struct Result: Sendable, Hashable, Codable {
        /// Registrations taken out of this relay's `registration_counts` (they had been counted).
        public var registrationsUncounted = 0
        /// Registrations not counted yet, now recorded so that they never are.
        public var registrationsNeverCounted = 0
        /// Rows of `registration_tokens` deleted.
        public var tokensForgotten = 0

        /// Nothing changed.
        public init() {}
    }

    /// Takes `targets`, registrations of the relay `relayID`, out of the fleet's counts.
    ///
    /// `erased_registrations` holds every registration of each relay the fleet will never count:
    /// a target there is done already. Otherwise one below the relay's position (read under a row
    /// lock, so its aggregator's next transaction waits) was counted and its app's row of this
    /// relay drops by one; one at or after it was not, and is recorded. Each target's token digest
    /// row goes, and this relay's distinct tokens of its app drop by one per row removed.
    /// Idempotent. The caller keeps this relay's fleet aggregator from counting meanwhile.
    ///
    /// - Throws: the database's error (nothing changed then).
    public static func apply(
        _ targets: [ErasurePlan.Target], relayID: String, connection: PostgresConnection, logger: Logger
    ) async throws -> Result {
        try await connection.withTransaction(logger: logger) { connection in
            var position: Int64?
            for try await (next) in try await connection.query(
                "SELECT next_sequence FROM relay_positions WHERE relay_id = \(relayID)::uuid FOR UPDATE", logger: logger
            ).decode(Int64.self) {
                position = next
            }
            var result = Result()
            for target in targets {
                let sequence = Int64(bitPattern: target.sequence)
                var inserted = false
                for try await _ in try await connection.query(
                    """
                    INSERT INTO erased_registrations (relay_id, sequence) VALUES (\(relayID)::uuid, \(sequence))
                    ON CONFLICT DO NOTHING RETURNING sequence
                    """, logger: logger
                ).decode(Int64.self) {
                    inserted = true
                }
                guard inserted else { continue }
                // A copy (a re-queued dead letter) was never counted; the entry it copies was.
                if let position, sequence < position, !target.isCopy {
                    try await connection.query(
                        """
                        UPDATE registration_counts SET registrations = registrations - 1
                        WHERE tenant = \(target.tenant) AND integration_key = \(target.integrationKey) AND platform = \(target.platform)
                          AND relay_id = \(relayID)::uuid AND registrations > 0
                        """, logger: logger)
                    result.registrationsUncounted += 1
                } else {
                    result.registrationsNeverCounted += 1
                }
            }
            for target in targets {
                var deleted = false
                for try await _ in try await connection.query(
                    """
                    DELETE FROM registration_tokens
                    WHERE tenant = \(target.tenant) AND integration_key = \(target.integrationKey) AND platform = \(target.platform)
                      AND registration_token = \(target.tokenDigest)
                    RETURNING 1
                    """, logger: logger
                ).decode(Int.self) {
                    deleted = true
                }
                guard deleted else { continue }
                result.tokensForgotten += 1
                try await connection.query(
                    """
                    UPDATE registration_counts SET distinct_tokens = distinct_tokens - 1
                    WHERE tenant = \(target.tenant) AND integration_key = \(target.integrationKey) AND platform = \(target.platform)
                      AND relay_id = \(relayID)::uuid AND distinct_tokens > 0
                    """, logger: logger)
            }
            return result
        }
    }
}

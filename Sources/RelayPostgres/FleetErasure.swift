public import Logging
public import PostgresNIO
public import RelayAggregates
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

        /// What `uncounted` says changed.
        init(_ uncounted: UncountedRegistrations) {
            registrationsUncounted = uncounted.uncounted
            registrationsNeverCounted = uncounted.neverCounted
            tokensForgotten = uncounted.tokensForgotten
        }
    }

    /// Takes `targets`, registrations of the relay `relayID`, out of the fleet's counts of the
    /// metrics of `table` (``uncount(_:relayID:table:connection:logger:)``).
    ///
    /// - Throws: the database's error (nothing changed then).
    public static func apply(
        _ targets: [ErasurePlan.Target], relayID: String, table: MetricTable = .standard, connection: PostgresConnection, logger: Logger
    ) async throws -> Result {
        Result(try await uncount(targets.map(ErasedRegistration.init), relayID: relayID, table: table, connection: connection, logger: logger))
    }

    /// Takes `registrations` of the relay `relayID` out of the fleet's counts.
    ///
    /// `erased_registrations` holds every registration of each relay the fleet will never count:
    /// one there is done already. Otherwise one below the relay's position (read under a row
    /// lock, so its aggregator's next transaction waits) was counted: its app's row of this relay
    /// drops by one in every per-app total metric of `table` whose predicate it matches; one at
    /// or after it was not, and is recorded. Each token digest row goes, and this relay's distinct
    /// tokens of its app drop by one per row removed. Idempotent. The caller keeps this relay's
    /// fleet aggregator from counting meanwhile.
    ///
    /// - Throws: the database's error (nothing changed then).
    static func uncount(
        _ registrations: [ErasedRegistration], relayID: String, table: MetricTable, connection: PostgresConnection, logger: Logger
    ) async throws -> UncountedRegistrations {
        try await connection.withTransaction(logger: logger) { connection in
            var position: Int64?
            for try await (next) in try await connection.query(
                "SELECT next_sequence FROM relay_positions WHERE relay_id = \(relayID)::uuid FOR UPDATE", logger: logger
            ).decode(Int64.self) {
                position = next
            }
            var result = UncountedRegistrations()
            for registration in registrations {
                let sequence = Int64(bitPattern: registration.sequence)
                let app = registration.facts
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
                if let position, sequence < position, !registration.isCopy {
                    for metric in registration.totals(in: table) {
                        try await connection.query(
                            """
                            UPDATE registration_counts SET \(unescaped: metric.column) = \(unescaped: metric.column) - 1
                            WHERE tenant = \(app.tenant) AND integration_key = \(app.integrationKey) AND platform = \(app.platform)
                              AND relay_id = \(relayID)::uuid AND \(unescaped: metric.column) > 0
                            """, logger: logger)
                    }
                    result.uncounted += 1
                } else {
                    result.neverCounted += 1
                }
            }
            for registration in registrations {
                let app = registration.facts
                var deleted = false
                for try await _ in try await connection.query(
                    """
                    DELETE FROM registration_tokens
                    WHERE tenant = \(app.tenant) AND integration_key = \(app.integrationKey) AND platform = \(app.platform)
                      AND registration_token = \(registration.tokenDigest)
                    RETURNING 1
                    """, logger: logger
                ).decode(Int.self) {
                    deleted = true
                }
                guard deleted else { continue }
                result.tokensForgotten += 1
                guard let tokens = table.appTokens?.column else { continue }
                try await connection.query(
                    """
                    UPDATE registration_counts SET \(unescaped: tokens) = \(unescaped: tokens) - 1
                    WHERE tenant = \(app.tenant) AND integration_key = \(app.integrationKey) AND platform = \(app.platform)
                      AND relay_id = \(relayID)::uuid AND \(unescaped: tokens) > 0
                    """, logger: logger)
            }
            return result
        }
    }
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

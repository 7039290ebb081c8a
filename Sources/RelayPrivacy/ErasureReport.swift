public import RelayAggregator
public import RelayLog
public import RelayPostgres

/// The answer to an erasure, and its record in the audit log (``ErasureAuditLog``): when, whose
/// (the selector's keyed hash, never the selector), how many registrations, and where they were.
/// It holds no personal data. Its fields are in `docs/privacy.md`.
public struct ErasureReport: Sendable, Hashable, Codable {
    /// What the selector was, without its value.
    public struct Selector: Sendable, Hashable, Codable {
        /// `registration-token` or `user-key`.
        public var kind: String
        /// Its keyed hash: `hash:` and 12 hex digits (``Pseudonymizer``).
        public var hash: String
        /// The app it was limited to, if any.
        public var integrationKey: String?
    }

    /// What had already left the relay when the erasure began: a privacy request must also go to
    /// Campaign's own privacy service (and to the central relay) for these.
    public struct Forwarded: Sendable, Hashable, Codable {
        /// Registrations the uploader had delivered to a Campaign marketing host (its lane had
        /// passed them, and they are not dead letters).
        public var toCampaign = 0
        /// Registrations the relay lane had handed on to a central relay.
        public var toCentralRelay = 0
        /// When the earliest and the latest of the registrations sent on were received (RFC 3339):
        /// the relay sends a registration within seconds unless its host was down.
        public var firstReceivedAt: String?
        /// See ``firstReceivedAt``.
        public var lastReceivedAt: String?
        /// When the uploader last delivered a registration of the person's tokens, as its
        /// deduplication state remembers it (registrations from JSON or files only).
        public var lastDeliveredAt: [String] = []
    }

    /// The erasure's id.
    public var id: String
    /// When it was asked for, and when it was done (RFC 3339; `nil` for a dry run).
    public var requestedAt: String
    /// See ``requestedAt``.
    public var completedAt: String?
    /// Whether it only counted (`--dry-run`): nothing was changed.
    public var dryRun: Bool
    /// Whose registrations.
    public var selector: Selector
    /// Registrations found in the log and archives, below ``boundary``.
    public var registrations: Int
    /// Registrations later than this sequence number were not looked at (they came after the request).
    public var boundary: UInt64
    /// The log's segments and each archive: entries erased, segments rewritten (in a dry run, the
    /// entries that would be erased in each, and no segment).
    public var rewrites: [LogErasure.Rewrite]
    /// Dead letters deleted (or, in a dry run, found).
    public var deadLetters: Int
    /// Rows of the uploader's deduplication state deleted.
    public var deduplicationRecords: Int
    /// What changed in the aggregates; `nil` when the data directory has none.
    public var aggregates: AggregateErasure?
    /// What changed in the fleet's PostgreSQL; `nil` when the relay counts into none.
    public var fleet: FleetErasure.Result?
    /// What had already been sent on.
    public var forwarded: Forwarded
    /// Registrations found that had not been sent on yet, and now never will be.
    public var notYetForwarded: Int
    /// The relays that handed some of these registrations on to this one (relay chains): erase
    /// the same selector there too.
    public var originRelays: [String]
    /// On the log in PostgreSQL, the erasures of the streams this relay forwards for relays that
    /// stopped (adopted streams), one report each, named by ``rewrites``; `nil` elsewhere.
    public var adoptedStreams: [ErasureReport]?
}

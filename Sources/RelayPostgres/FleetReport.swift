public import RelayAggregates
public import RelayCore

/// The fleet's counts, read from PostgreSQL: what `stats --postgres-url --json` prints and
/// `GET /v1/deliveries` answers on a relay started with `--postgres-url`.
///
/// ```json
/// {"deliveries":[…as in aggregates.sqlite, summed over relays…],
///  "registrations":[…],
///  "relays":[{"epoch":E,"events":N,"nextSequence":S,"relayId":"…","updatedAt":"RFC 3339"}],
///  "source":"postgres"}
/// ```
public struct FleetReport: Sendable, Hashable, Encodable {
    /// One relay's position: everything in its log below `nextSequence` is counted.
    public struct CountedRelay: Sendable, Hashable, Encodable {
        /// The relay id.
        public var relayId: String
        /// The epoch of its data directory the position belongs to.
        public var epoch: UInt32
        /// Every event of its log below this sequence is counted.
        public var nextSequence: UInt64
        /// Events counted from it.
        public var events: Int64
        /// When it last committed.
        public var updatedAt: EventTime
    }

    /// Deliveries summed over the fleet, most recently active first.
    public var deliveries: [DeliveryCounts]
    /// Registrations summed over the fleet, most recently active first.
    public var registrations: [RegistrationCounts]
    /// Every relay that counts into the database.
    public var relays: [CountedRelay]
    /// Always `postgres`: says where the counts come from.
    public var source = "postgres"
}

public import RelayCore

/// What the aggregates say about the events another relay took first and handed on (relay
/// chains, `docs/relay-protocol.md`): one row per origin relay and the relay that handed them to
/// this one.
public struct OriginCounts: Sendable, Hashable, Encodable {
    /// The relay that took the events from the SDKs (the first origin), lower-case UUID.
    public var relayId: String
    /// The relay that handed them to this one, when it is not the origin itself (a chain of three
    /// or more); `nil` for events received straight from their origin.
    public var via: String?
    /// Every event counted from this origin.
    public var events: Int64
    /// Of them, tracking hits.
    public var hits: Int64
    /// Of them, registrations.
    public var registrations: Int64
    /// The newest epoch of the origin relay seen (it changes when its data directory is restored
    /// from a copy).
    public var epoch: UInt32
    /// The highest origin sequence seen in that epoch: how far into the origin's log this relay has
    /// everything.
    public var lastSequence: UInt64
    /// The earliest event time seen.
    public var firstEvent: EventTime
    /// The latest event time seen.
    public var lastEvent: EventTime

    /// Creates counts.
    public init(
        relayId: String, via: String?, events: Int64, hits: Int64, registrations: Int64, epoch: UInt32, lastSequence: UInt64,
        firstEvent: EventTime, lastEvent: EventTime
    ) {
        self.relayId = relayId
        self.via = via
        self.events = events
        self.hits = hits
        self.registrations = registrations
        self.epoch = epoch
        self.lastSequence = lastSequence
        self.firstEvent = firstEvent
        self.lastEvent = lastEvent
    }
}

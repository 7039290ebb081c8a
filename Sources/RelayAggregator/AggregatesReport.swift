public import RelayAggregates
import RelayCore

/// What the aggregates hold: the one definition behind `campaign-relay stats --json` and
/// `GET /v1/deliveries`, so the two answer in the same envelope.
///
/// ```json
/// {"aggregatedThrough":N,
///  "deliveries":[{"clicks":…,"deliveryId":…,"firstEvent":"RFC 3339","impressions":…,"lastEvent":"RFC 3339",
///                 "opens":…,"uniqueClicks":…,"uniqueImpressions":…,"uniqueOpens":…}],
///  "registrations":[{"distinctTokens":…,"firstEvent":…,"integrationKey":…,"lastEvent":…,
///                    "platform":"ios"|"android","registrations":…}],
///  "origins":[{"epoch":…,"events":…,"firstEvent":…,"hits":…,"lastEvent":…,"lastSequence":…,
///              "registrations":…,"relayId":…,"via":…}],
///  "sequences":{"first":F,"next":N+1}}
/// ```
///
/// Keys come sorted (``APIJSON``).
public struct AggregatesReport: Sendable, Hashable, Encodable {
    /// The log sequences the counts cover: `first ..< next`.
    public var sequences: Range<UInt64>
    /// Deliveries, most recently active first.
    public var deliveries: [DeliveryCounts]
    /// Registrations per app and platform, most recently active first.
    public var registrations: [RegistrationCounts]
    /// Events other relays handed on, per first origin (and the relay they came through), most
    /// recently active first; empty on a relay that receives from SDKs only.
    public var origins: [OriginCounts]

    /// A report of `deliveries`, `registrations` and `origins`, covering `sequences`.
    public init(sequences: Range<UInt64>, deliveries: [DeliveryCounts], registrations: [RegistrationCounts], origins: [OriginCounts]) {
        self.sequences = sequences
        self.deliveries = deliveries
        self.registrations = registrations
        self.origins = origins
    }

    /// The last sequence counted (0 when none).
    public var aggregatedThrough: UInt64 { sequences.upperBound > 0 ? sequences.upperBound - 1 : 0 }

    private enum CodingKeys: String, CodingKey {
        case aggregatedThrough, sequences, deliveries, registrations, origins
    }

    private enum SequenceKeys: String, CodingKey {
        case first, next
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(aggregatedThrough, forKey: .aggregatedThrough)
        var range = container.nestedContainer(keyedBy: SequenceKeys.self, forKey: .sequences)
        try range.encode(sequences.lowerBound, forKey: .first)
        try range.encode(sequences.upperBound, forKey: .next)
        try container.encode(deliveries, forKey: .deliveries)
        try container.encode(registrations, forKey: .registrations)
        try container.encode(origins, forKey: .origins)
    }
}

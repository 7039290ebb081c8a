public import RelayCore

/// A name of a counted value, as a JSON key.
struct CountKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// What the aggregates say about one delivery: one value per per-delivery metric of the
/// ``MetricTable`` it was read with.
///
/// Its JSON holds `tenant`, `deliveryId`, `firstEvent`, `lastEvent` and each metric's value under
/// its name (for the standard table: `impressions`, `opens`, `clicks`, `uniqueImpressions`,
/// `uniqueOpens`, `uniqueClicks`).
public struct DeliveryCounts: Sendable, Hashable, Encodable {
    /// The tenant the delivery belongs to: its name, or `default` (see ``TenantName``).
    public var tenant: String
    /// The delivery identifier (`_dId`), unique within its tenant.
    public var deliveryId: String
    /// Each metric's value, by its name (``AggregateMetric/name``).
    public var values: [String: Int64]
    /// The earliest event time seen.
    public var firstEvent: EventTime
    /// The latest event time seen.
    public var lastEvent: EventTime

    /// Counts of `values`, by metric name.
    public init(
        tenant: String = TenantName.defaultTenantText, deliveryId: String, values: [String: Int64], firstEvent: EventTime, lastEvent: EventTime
    ) {
        self.tenant = tenant
        self.deliveryId = deliveryId
        self.values = values
        self.firstEvent = firstEvent
        self.lastEvent = lastEvent
    }

    /// Counts of the standard metrics.
    public init(
        tenant: String = TenantName.defaultTenantText, deliveryId: String, impressions: Int64, opens: Int64, clicks: Int64, uniqueImpressions: Int64,
        uniqueOpens: Int64,
        uniqueClicks: Int64, firstEvent: EventTime, lastEvent: EventTime
    ) {
        self.init(
            tenant: tenant, deliveryId: deliveryId,
            values: [
                "impressions": impressions, "opens": opens, "clicks": clicks, "uniqueImpressions": uniqueImpressions, "uniqueOpens": uniqueOpens,
                "uniqueClicks": uniqueClicks,
            ], firstEvent: firstEvent, lastEvent: lastEvent)
    }

    /// The value of the metric `name` (0 when it was not read).
    public subscript(name: String) -> Int64 {
        get { values[name] ?? 0 }
        set { values[name] = newValue }
    }

    /// Every impression hit.
    public var impressions: Int64 {
        get { self["impressions"] }
        set { self["impressions"] = newValue }
    }
    /// Every open hit.
    public var opens: Int64 {
        get { self["opens"] }
        set { self["opens"] = newValue }
    }
    /// Every click hit.
    public var clicks: Int64 {
        get { self["clicks"] }
        set { self["clicks"] = newValue }
    }
    /// Distinct messages with an impression (the SDKs may send a hit twice).
    public var uniqueImpressions: Int64 {
        get { self["uniqueImpressions"] }
        set { self["uniqueImpressions"] = newValue }
    }
    /// Distinct messages opened.
    public var uniqueOpens: Int64 {
        get { self["uniqueOpens"] }
        set { self["uniqueOpens"] = newValue }
    }
    /// Distinct messages clicked.
    public var uniqueClicks: Int64 {
        get { self["uniqueClicks"] }
        set { self["uniqueClicks"] = newValue }
    }

    /// Encodes the delivery's names, times and every value under its metric's name.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CountKey.self)
        try container.encode(tenant, forKey: CountKey(stringValue: "tenant"))
        try container.encode(deliveryId, forKey: CountKey(stringValue: "deliveryId"))
        for (name, value) in values { try container.encode(value, forKey: CountKey(stringValue: name)) }
        try container.encode(firstEvent, forKey: CountKey(stringValue: "firstEvent"))
        try container.encode(lastEvent, forKey: CountKey(stringValue: "lastEvent"))
    }
}

/// What the aggregates say about the registrations of one app on one platform: one value per
/// per-app metric of the ``MetricTable`` it was read with (for the standard table,
/// `registrations` and `distinctTokens`).
public struct RegistrationCounts: Sendable, Hashable, Encodable {
    /// The tenant the app belongs to: its name, or `default` (see ``TenantName``).
    public var tenant: String
    /// The app's integration key.
    public var integrationKey: String
    /// `ios` or `android`.
    public var platform: Platform
    /// Each metric's value, by its name (``AggregateMetric/name``).
    public var values: [String: Int64]
    /// The earliest registration time seen.
    public var firstEvent: EventTime
    /// The latest registration time seen.
    public var lastEvent: EventTime

    /// Counts of `values`, by metric name.
    public init(
        tenant: String = TenantName.defaultTenantText, integrationKey: String, platform: Platform, values: [String: Int64], firstEvent: EventTime,
        lastEvent: EventTime
    ) {
        self.tenant = tenant
        self.integrationKey = integrationKey
        self.platform = platform
        self.values = values
        self.firstEvent = firstEvent
        self.lastEvent = lastEvent
    }

    /// Counts of the standard metrics.
    public init(
        tenant: String = TenantName.defaultTenantText, integrationKey: String, platform: Platform, registrations: Int64, distinctTokens: Int64,
        firstEvent: EventTime, lastEvent: EventTime
    ) {
        self.init(
            tenant: tenant, integrationKey: integrationKey, platform: platform,
            values: ["registrations": registrations, "distinctTokens": distinctTokens], firstEvent: firstEvent, lastEvent: lastEvent)
    }

    /// The value of the metric `name` (0 when it was not read).
    public subscript(name: String) -> Int64 {
        get { values[name] ?? 0 }
        set { values[name] = newValue }
    }

    /// Every registration seen.
    public var registrations: Int64 {
        get { self["registrations"] }
        set { self["registrations"] = newValue }
    }
    /// Distinct registration tokens.
    public var distinctTokens: Int64 {
        get { self["distinctTokens"] }
        set { self["distinctTokens"] = newValue }
    }

    /// Encodes the app, its times and every value under its metric's name.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CountKey.self)
        try container.encode(tenant, forKey: CountKey(stringValue: "tenant"))
        try container.encode(integrationKey, forKey: CountKey(stringValue: "integrationKey"))
        try container.encode(platform, forKey: CountKey(stringValue: "platform"))
        for (name, value) in values { try container.encode(value, forKey: CountKey(stringValue: name)) }
        try container.encode(firstEvent, forKey: CountKey(stringValue: "firstEvent"))
        try container.encode(lastEvent, forKey: CountKey(stringValue: "lastEvent"))
    }
}

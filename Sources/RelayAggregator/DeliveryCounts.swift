public import RelayCore

/// What the aggregates say about one delivery.
public struct DeliveryCounts: Sendable, Hashable, Encodable {
    /// The tenant the delivery belongs to: its name, or `default` (see ``TenantName``).
    public var tenant: String
    /// The delivery identifier (`_dId`), unique within its tenant.
    public var deliveryId: String
    /// Every impression hit.
    public var impressions: Int64
    /// Every open hit.
    public var opens: Int64
    /// Every click hit.
    public var clicks: Int64
    /// Distinct messages with an impression (the SDKs may send a hit twice).
    public var uniqueImpressions: Int64
    /// Distinct messages opened.
    public var uniqueOpens: Int64
    /// Distinct messages clicked.
    public var uniqueClicks: Int64
    /// The earliest event time seen.
    public var firstEvent: EventTime
    /// The latest event time seen.
    public var lastEvent: EventTime

    /// Creates counts.
    public init(
        tenant: String = TenantName.defaultTenantText, deliveryId: String, impressions: Int64, opens: Int64, clicks: Int64, uniqueImpressions: Int64,
        uniqueOpens: Int64,
        uniqueClicks: Int64, firstEvent: EventTime, lastEvent: EventTime
    ) {
        self.tenant = tenant
        self.deliveryId = deliveryId
        self.impressions = impressions
        self.opens = opens
        self.clicks = clicks
        self.uniqueImpressions = uniqueImpressions
        self.uniqueOpens = uniqueOpens
        self.uniqueClicks = uniqueClicks
        self.firstEvent = firstEvent
        self.lastEvent = lastEvent
    }
}

/// What the aggregates say about the registrations of one app on one platform.
public struct RegistrationCounts: Sendable, Hashable, Encodable {
    /// The tenant the app belongs to: its name, or `default` (see ``TenantName``).
    public var tenant: String
    /// The app's integration key.
    public var integrationKey: String
    /// `ios` or `android`.
    public var platform: Platform
    /// Every registration seen.
    public var registrations: Int64
    /// Distinct registration tokens.
    public var distinctTokens: Int64
    /// The earliest registration time seen.
    public var firstEvent: EventTime
    /// The latest registration time seen.
    public var lastEvent: EventTime

    /// Creates counts.
    public init(
        tenant: String = TenantName.defaultTenantText, integrationKey: String, platform: Platform, registrations: Int64, distinctTokens: Int64,
        firstEvent: EventTime, lastEvent: EventTime
    ) {
        self.tenant = tenant
        self.integrationKey = integrationKey
        self.platform = platform
        self.registrations = registrations
        self.distinctTokens = distinctTokens
        self.firstEvent = firstEvent
        self.lastEvent = lastEvent
    }
}

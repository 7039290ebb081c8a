public import RelayCore

/// One aggregate metric, declared once: its name, what it counts (a tracking action or any
/// predicate over hits, every registration or a predicate over registrations), whether it counts
/// every event or distinct ones, and so whether it is kept per delivery or per app.
///
/// Everything else follows from the declaration (``MetricTable``): the column in SQLite's and
/// PostgreSQL's tables, their upserts and the migration that adds the column to an existing
/// database, the key in ``DeliveryCounts`` or ``RegistrationCounts`` (`stats --json`,
/// `/v1/deliveries`), the column of `stats`, and what an erasure subtracts.
public struct AggregateMetric: Sendable {
    /// Every matching event, or distinct ones (messages of a delivery, tokens of an app).
    public enum Kind: Sendable, Hashable {
        /// Every event counted.
        case total
        /// Distinct messages (per delivery) or distinct registration tokens (per app).
        case unique
    }

    /// The events a metric counts; which kind of event says whether it is kept per delivery (hits)
    /// or per app (registrations).
    public enum Counted: Sendable {
        /// Tracking hits that match, counted against their delivery.
        case hits(HitPredicate)
        /// Registrations that match, counted against their app (tenant, integration key, platform).
        case registrations(RegistrationPredicate)
    }

    /// Where a metric's counts are kept.
    public enum Scope: Sendable, Hashable {
        /// A column of the deliveries' rows.
        case perDelivery
        /// A column of the apps' rows.
        case perApp
    }

    /// The key in the JSON objects (`uniqueOpens`), camel case.
    public var name: String
    /// The column in both databases (`unique_opens`).
    public var column: String
    /// The column's header in `stats`' text.
    public var label: String
    /// Every matching event or distinct ones.
    public var kind: Kind
    /// What it counts.
    public var counted: Counted

    /// Declares a metric. `column` defaults to `name` in snake case, `label` to `column` with
    /// spaces.
    public init(_ name: String, column: String? = nil, label: String? = nil, _ kind: Kind, _ counted: Counted) {
        let column = column ?? Self.snakeCase(name)
        self.name = name
        self.column = column
        self.label = label ?? column.replacingUnderscoresWithSpaces
        self.kind = kind
        self.counted = counted
    }

    /// Per delivery (hits) or per app (registrations).
    public var scope: Scope {
        switch counted {
        case .hits: .perDelivery
        case .registrations: .perApp
        }
    }

    /// `lateHits` → `late_hits`.
    static func snakeCase(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }
}

/// Which tracking hits a per-delivery metric counts.
public struct HitPredicate: Sendable {
    /// The action it stands for when it is exactly "hits of this action" (the standard metrics),
    /// which the reduction tests without calling ``matches``.
    public let action: TrackingAction?
    /// Whether `hit` counts.
    public let matches: @Sendable (TrackingEvent) -> Bool

    /// Hits for which `matches` holds.
    public init(_ matches: @escaping @Sendable (TrackingEvent) -> Bool) {
        self.action = nil
        self.matches = matches
    }

    private init(action: TrackingAction) {
        self.action = action
        self.matches = { $0.action == action }
    }

    /// Hits of `action`.
    public static func action(_ action: TrackingAction) -> HitPredicate { HitPredicate(action: action) }
}

/// What a per-app metric's predicate sees of a registration: what the aggregates and an erasure's
/// plan both know of it, so that an erasure takes out of a metric exactly what counting put in.
public struct RegistrationFacts: Sendable, Hashable {
    /// The tenant's stored name (`""`: the default tenant).
    public var tenant: String
    /// The app's integration key.
    public var integrationKey: String
    /// `ios` or `android`.
    public var platform: String
    /// When it happened, in nanoseconds since the Unix epoch.
    public var timeNanoseconds: Int64
    /// The relay that first logged it, when another relay handed it on.
    public var originRelayID: String?

    /// Facts of a registration.
    public init(tenant: String, integrationKey: String, platform: String, timeNanoseconds: Int64, originRelayID: String?) {
        self.tenant = tenant
        self.integrationKey = integrationKey
        self.platform = platform
        self.timeNanoseconds = timeNanoseconds
        self.originRelayID = originRelayID
    }
}

/// Which registrations a per-app metric counts.
public struct RegistrationPredicate: Sendable {
    /// Whether it counts every registration (the standard metrics).
    public let isEvery: Bool
    /// Whether a registration with `facts` counts.
    public let matches: @Sendable (RegistrationFacts) -> Bool

    /// Registrations for which `matches` holds.
    public init(_ matches: @escaping @Sendable (RegistrationFacts) -> Bool) {
        self.isEvery = false
        self.matches = matches
    }

    private init() {
        self.isEvery = true
        self.matches = { _ in true }
    }

    /// Every registration.
    public static let every = RegistrationPredicate()
}

extension String {
    fileprivate var replacingUnderscoresWithSpaces: String { String(map { $0 == "_" ? " " : $0 }) }
}

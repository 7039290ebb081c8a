/// The one table of aggregate metrics: each declared once (``AggregateMetric``), in the order
/// `stats` shows them. Both backends build their columns, upserts and migrations from it, the
/// counts read back (``DeliveryCounts``, ``RegistrationCounts``) carry one value per metric, and
/// an erasure subtracts from every per-app metric whose predicate the registration matched.
///
/// The per-delivery unique metrics are numbered in table order (their *set*): the tables of
/// distinct messages key each delivery's set as ``MessageSetKey``. The standard table's are 0
/// impressions, 1 opens, 2 clicks, as every database so far stores them; a new one takes the next.
/// Per app, one unique metric is supported: the tokens of `registration_tokens`.
public struct MetricTable: Sendable {
    /// Every metric, in declaration order.
    public let metrics: [AggregateMetric]
    /// The per-delivery metrics, in table order: the deliveries' columns.
    public let perDelivery: [AggregateMetric]
    /// The per-app metrics, in table order: the apps' columns.
    public let perApp: [AggregateMetric]
    /// The per-delivery total metrics (what ``CountDeltas/Delivery/totals`` holds, in order).
    public let deliveryTotals: [AggregateMetric]
    /// The per-delivery unique metrics, by set number.
    public let deliverySets: [AggregateMetric]
    /// The per-app total metrics (what ``CountDeltas/Registrations/totals`` holds, in order).
    public let appTotals: [AggregateMetric]
    /// The per-app unique metric (distinct tokens), if the table has one.
    public let appTokens: AggregateMetric?

    /// A table of `metrics`.
    ///
    /// - Precondition: names and columns are distinct, and at most one per-app metric is unique
    ///   (the table is code, written once, not input).
    public init(_ metrics: [AggregateMetric]) {
        precondition(Set(metrics.map(\.name)).count == metrics.count, "two metrics of one name")
        precondition(Set(metrics.map(\.column)).count == metrics.count, "two metrics of one column")
        // Names share the counts' JSON objects with their other keys; columns are written into SQL.
        precondition(metrics.allSatisfy { !Self.reservedNames.contains($0.name) }, "a metric named as a key the counts already have")
        precondition(metrics.allSatisfy { Self.isIdentifier($0.column) }, "a column that is not a plain SQL identifier")
        self.metrics = metrics
        perDelivery = metrics.filter { $0.scope == .perDelivery }
        perApp = metrics.filter { $0.scope == .perApp }
        deliveryTotals = perDelivery.filter { $0.kind == .total }
        deliverySets = perDelivery.filter { $0.kind == .unique }
        appTotals = perApp.filter { $0.kind == .total }
        let appUniques = perApp.filter { $0.kind == .unique }
        precondition(appUniques.count <= 1, "one per-app unique metric at most: the distinct tokens")
        appTokens = appUniques.first
    }

    /// The keys ``DeliveryCounts`` and ``RegistrationCounts`` have besides their metrics.
    static let reservedNames: Set<String> = ["tenant", "deliveryId", "integrationKey", "platform", "firstEvent", "lastEvent", "values"]

    /// Whether `column` is lower-case letters, digits and underscores, starting with a letter.
    static func isIdentifier(_ column: String) -> Bool {
        guard let first = column.unicodeScalars.first, ("a"..."z").contains(first) else { return false }
        return column.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// This table with `metric` added at the end.
    public func adding(_ metric: AggregateMetric) -> MetricTable { MetricTable(metrics + [metric]) }

    /// The metrics of every database made before metrics were declared in a table (SQLite's
    /// schema 5, PostgreSQL's 4): their columns are in both backends' base schema, so no migration
    /// adds them. It never changes; a metric added later is a migration of its own.
    public static let original = MetricTable([
        AggregateMetric("impressions", .total, .hits(.action(.impression))),
        AggregateMetric("opens", .total, .hits(.action(.open))),
        AggregateMetric("clicks", .total, .hits(.action(.click))),
        AggregateMetric("uniqueImpressions", label: "unique impr.", .unique, .hits(.action(.impression))),
        AggregateMetric("uniqueOpens", .unique, .hits(.action(.open))),
        AggregateMetric("uniqueClicks", .unique, .hits(.action(.click))),
        AggregateMetric("registrations", .total, .registrations(.every)),
        AggregateMetric("distinctTokens", .unique, .registrations(.every)),
    ])

    /// The metrics every relay counts, in the order `stats` shows them. A metric every relay
    /// should count is a line here (after the original ones): both backends add its column by a
    /// migration named after it, and every output lists it.
    public static let standard = MetricTable(original.metrics + [])

    /// Whether `metric`'s column is in every database's base schema (one of ``original``), so no
    /// migration adds it.
    public static func isOriginal(_ metric: AggregateMetric) -> Bool { original.metrics.contains { $0.column == metric.column } }

    /// The metrics a migration must add to a database made before metrics were declared: the ones
    /// not in ``original``, in table order.
    public var added: [AggregateMetric] { metrics.filter { !Self.isOriginal($0) } }
}

/// The key under which both databases store a delivery's set of distinct messages: the delivery's
/// row (`delivery_ref`) and the set's number in ``MetricTable/deliverySets``.
///
/// Sets 0 to 3 are `delivery_ref * 4 + set`, as every database so far stores them
/// (docs/aggregates.md); later sets take negative keys, `-1 - (delivery_ref * 256 + set - 4)`, so
/// they never meet an existing key.
public enum MessageSetKey {
    /// The key of `set` of the delivery `reference`.
    public static func key(reference: Int64, set: Int) -> Int64 {
        set < 4 ? reference &* 4 &+ Int64(set) : -1 &- (reference &* 256 &+ Int64(set - 4))
    }

    /// The delivery and set of `key`.
    public static func parts(of key: Int64) -> (reference: Int64, set: Int) {
        if key >= 0 { return (key >> 2, Int(key & 3)) }
        let value = -1 - key
        return (value >> 8, Int(value & 255) + 4)
    }
}

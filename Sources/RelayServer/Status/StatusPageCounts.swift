import RelayAggregates
import RelayCore

/// The parts of the status page (``StatusPage``) that show counts, made from a ``MetricTable``:
/// per delivery, each total metric then the unique metric of the same action under "unique" (the
/// others alone, under their labels); per app, each metric under its label. Cells are named after
/// their metric in kebab case (`unique-impressions`), as the page's tests find them.
struct StatusPageCounts {
    /// The per-delivery metrics, grouped as the page shows them: a total and its unique, or one alone.
    private let deliveryGroups: [[AggregateMetric]]
    private let table: MetricTable

    init(_ table: MetricTable) {
        self.table = table
        var groups: [[AggregateMetric]] = []
        var paired: Set<String> = []
        func action(_ metric: AggregateMetric) -> TrackingAction? {
            guard case .hits(let predicate) = metric.counted else { return nil }
            return predicate.action
        }
        for metric in table.deliveryTotals {
            let unique = table.deliverySets.first { action($0) != nil && action($0) == action(metric) && !paired.contains($0.name) }
            if let unique { paired.insert(unique.name) }
            groups.append([metric] + (unique.map { [$0] } ?? []))
        }
        for metric in table.deliverySets where !paired.contains(metric.name) { groups.append([metric]) }
        deliveryGroups = groups
    }

    /// `impressions` → `impressions`, `uniqueOpens` → `unique-opens`.
    private static func kebab(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase { result += "-" + character.lowercased() } else { result.append(character) }
        }
        return result
    }

    private static func cell(_ object: String, _ metric: AggregateMetric) -> String {
        #"cell(row, number(\#(object).\#(metric.name)), "n", "\#(kebab(metric.name))");"#
    }

    /// The deliveries' metric headers.
    var deliveryHeader: String {
        deliveryGroups.map { group in
            group.enumerated().map { #"<th class="n">\#($0.offset == 0 ? $0.element.label : "unique")</th>"# }.joined()
        }.joined()
    }

    /// The deliveries' metric cells: a line per group, each indented as the page's loop body.
    var deliveryCells: String {
        deliveryGroups.map { group in
            "    " + group.map { Self.cell("delivery", $0) }.joined(separator: " ") + "\n"
        }.joined()
    }

    /// What the activity sparkline sums: every hit, once (the totals of one action each).
    var activity: String {
        let totals = table.deliveryTotals.filter { metric in
            if case .hits(let predicate) = metric.counted { return predicate.action != nil }
            return false
        }
        return totals.map { "delivery.\($0.name)" }.joined(separator: " + ")
    }

    /// The apps' metric headers.
    var appHeader: String { table.perApp.map { #"<th class="n">\#($0.label)</th>"# }.joined() }

    /// The apps' metric cells, a line each.
    var appCells: String {
        table.perApp.map { "    " + Self.cell("app", $0) + "\n" }.joined()
    }
}

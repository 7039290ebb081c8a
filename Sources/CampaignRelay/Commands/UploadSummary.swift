import RelayCore
import RelayEventJSON
import RelayForwarding
import RelayServer

/// What an upload or replay run did, over its lanes.
struct UploadSummary {
    /// A lane, as the summary names it: from the uploader's lanes, one per sink of its lists.
    struct Lane {
        var name: String
        var kind: SinkKind
        var tenant: TenantName?

        /// The summary's view of `lane`.
        init(_ lane: UploadLane) {
            self.init(name: lane.name, kind: lane.kind, tenant: lane.tenant)
        }

        init(name: String, kind: SinkKind, tenant: TenantName?) {
            self.name = name
            self.kind = kind
            self.tenant = tenant
        }
    }

    /// Each lane's statistics, by lane name (`tracking`, `marketing`, `relay`).
    var lanes: [String: LaneStatistics]
    /// The lanes in the uploader's order (its sink lists'): how the text names what each took.
    var sinks: [Lane]
    var seconds: Double
    var pendingDeadLetters: Int
    /// A replay's parts of its range that are not in the log (`replay --json` lists them when any).
    var missing: [String] = []

    func total(_ value: (LaneStatistics) -> Int) -> Int { lanes.values.reduce(0) { $0 + value($1) } }
    var delivered: Int { total(\.delivered) }
    var backlog: UInt64 { lanes.values.reduce(0) { $0 + $1.backlog } }

    var text: String {
        var perLane = tallies(of: nil)
        perLane += perTenant
        var text = "delivered \(counted(delivered, "event"))" + (perLane.isEmpty ? "" : " (\(perLane.joined(separator: ", ")))")
        text +=
            "; skipped \(counted(total(\.skippedDuplicates), "unchanged registration")), dead-lettered \(total(\.deadLettered)), retries \(total(\.retries))"
        if total(\.rejected) > 0 { text += ", rejected \(total(\.rejected)) (not stored)" }
        text += ", backlog \(backlog), in \(String(format2: seconds)) s" + (RateText.events(delivered, seconds: seconds).map { " (\($0))" } ?? "")
        if pendingDeadLetters > 0 {
            text +=
                "\n\(counted(pendingDeadLetters, "dead letter")) \(pendingDeadLetters == 1 ? "waits" : "wait") in the store: campaign-relay deadletter list"
        }
        return text
    }

    /// What each lane of `tenant` (`nil`: the default tenant's and every tenant's) took, in its
    /// kind's words ("3 tracking hits", "2 to the central relay"), in the uploader's order.
    private func tallies(of tenant: TenantName?) -> [String] {
        sinks.filter { $0.tenant == tenant }.compactMap { lane in lanes[lane.name].map { lane.kind.tally.text($0.delivered) } }
    }

    /// "brand-a: 3 tracking hits and 1 registration", for each tenant with lanes
    /// (`tracking_brand-a`, `marketing_brand-a`), in name order.
    private var perTenant: [String] {
        let tenants = Set(sinks.compactMap(\.tenant)).sorted { $0.text < $1.text }
        return tenants.map { tenant in "\(tenant.text): \(tallies(of: tenant).joined(separator: " and "))" }
    }

    var json: String { APIJSON.text(self) }
}

extension UploadSummary: Encodable {
    private enum CodingKeys: String, CodingKey {
        case delivered, skippedDuplicates, deadLettered, rejected, retries, backlog, pendingDeadLetters, seconds, lanes, missing
    }

    /// `upload --json` and `replay --json`: the totals, then each lane by name.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(delivered, forKey: .delivered)
        try container.encode(total(\.skippedDuplicates), forKey: .skippedDuplicates)
        try container.encode(total(\.deadLettered), forKey: .deadLettered)
        try container.encode(total(\.rejected), forKey: .rejected)
        try container.encode(total(\.retries), forKey: .retries)
        try container.encode(backlog, forKey: .backlog)
        try container.encode(pendingDeadLetters, forKey: .pendingDeadLetters)
        try container.encode((seconds * 1000).rounded() / 1000, forKey: .seconds)
        try container.encode(lanes, forKey: .lanes)
        if !missing.isEmpty { try container.encode(missing, forKey: .missing) }
    }
}

import RelayEventJSON
import RelayForwarding
import RelayServer

/// What an upload or replay run did, over its lanes.
struct UploadSummary {
    /// Each lane's statistics, by lane name (`tracking`, `marketing`, `relay`).
    var lanes: [String: LaneStatistics]
    var seconds: Double
    var pendingDeadLetters: Int
    /// A replay's parts of its range that are not in the log (`replay --json` lists them when any).
    var missing: [String] = []

    func total(_ value: (LaneStatistics) -> Int) -> Int { lanes.values.reduce(0) { $0 + value($1) } }
    var delivered: Int { total(\.delivered) }
    var backlog: UInt64 { lanes.values.reduce(0) { $0 + $1.backlog } }

    var text: String {
        var perLane: [String] = []
        if let tracking = lanes[UploadLane.Kind.tracking.rawValue] { perLane.append(counted(tracking.delivered, "tracking hit")) }
        if let marketing = lanes[UploadLane.Kind.marketing.rawValue] { perLane.append(counted(marketing.delivered, "registration")) }
        if let relay = lanes[CentralRelaySink.laneName] { perLane.append("\(relay.delivered) to the central relay") }
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

    /// "brand-a: 3 tracking hits and 1 registration", for each tenant with lanes
    /// (`tracking_brand-a`, `marketing_brand-a`), in name order.
    private var perTenant: [String] {
        let (tracking, marketing) = (UploadLane.Kind.tracking.rawValue + "_", UploadLane.Kind.marketing.rawValue + "_")
        let tenants = Set(lanes.keys.compactMap { name in name.firstIndex(of: "_").map { String(name[name.index(after: $0)...]) } })
        return tenants.sorted().map { tenant in
            let parts = [
                lanes[tracking + tenant].map { counted($0.delivered, "tracking hit") },
                lanes[marketing + tenant].map { counted($0.delivered, "registration") },
            ].compactMap { $0 }
            return "\(tenant): \(parts.joined(separator: " and "))"
        }
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

import RelayForwarding

/// What an upload or replay run did, over its lanes.
struct UploadSummary {
    var lanes: [UploadLane.Kind: LaneStatistics]
    var seconds: Double
    var pendingDeadLetters: Int

    func total(_ value: (LaneStatistics) -> Int) -> Int { lanes.values.reduce(0) { $0 + value($1) } }
    var delivered: Int { total(\.delivered) }
    var backlog: UInt64 { lanes.values.reduce(0) { $0 + $1.backlog } }

    var text: String {
        var perLane: [String] = []
        if let tracking = lanes[.tracking] { perLane.append("\(tracking.delivered) tracking hits") }
        if let marketing = lanes[.marketing] { perLane.append("\(marketing.delivered) registrations") }
        var text = "delivered \(delivered) events" + (perLane.isEmpty ? "" : " (\(perLane.joined(separator: ", ")))")
        text += "; skipped \(total(\.skippedDuplicates)) unchanged registrations, dead-lettered \(total(\.deadLettered)), retries \(total(\.retries))"
        if total(\.rejected) > 0 { text += ", rejected \(total(\.rejected)) (not stored)" }
        text += ", backlog \(backlog), in \(String(format2: seconds)) s (\(seconds > 0 ? Int(Double(delivered) / seconds) : 0) events/s)"
        if pendingDeadLetters > 0 {
            text +=
                "\n\(counted(pendingDeadLetters, "dead letter")) \(pendingDeadLetters == 1 ? "waits" : "wait") in the store: campaign-relay deadletter list"
        }
        return text
    }

    var json: String {
        let laneJSON = lanes.sorted { $0.key.rawValue < $1.key.rawValue }.map { kind, stats in
            "\"\(kind.rawValue)\":{\"delivered\":\(stats.delivered),\"skippedDuplicates\":\(stats.skippedDuplicates),\"deadLettered\":\(stats.deadLettered),\"rejected\":\(stats.rejected),\"retries\":\(stats.retries),\"position\":\(stats.position),\"backlog\":\(stats.backlog)}"
        }.joined(separator: ",")
        return
            "{\"delivered\":\(delivered),\"skippedDuplicates\":\(total(\.skippedDuplicates)),\"deadLettered\":\(total(\.deadLettered)),\"rejected\":\(total(\.rejected)),\"retries\":\(total(\.retries)),\"backlog\":\(backlog),\"pendingDeadLetters\":\(pendingDeadLetters),\"seconds\":\(seconds),\"lanes\":{\(laneJSON)}}"
    }
}

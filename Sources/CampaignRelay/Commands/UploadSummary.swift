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
        var parts = ["delivered \(delivered) events"]
        if let tracking = lanes[.tracking] { parts.append("\(tracking.delivered) tracking hits") }
        if let marketing = lanes[.marketing] { parts.append("\(marketing.delivered) registrations") }
        var text = parts.joined(separator: ": ").replacingFirstColonList()
        text += "; skipped \(total(\.skippedDuplicates)) unchanged registrations, dead-lettered \(total(\.deadLettered)), retries \(total(\.retries))"
        text += ", backlog \(backlog), in \(String(format2: seconds)) s (\(seconds > 0 ? Int(Double(delivered) / seconds) : 0) events/s)"
        if pendingDeadLetters > 0 { text += "\n\(pendingDeadLetters) dead letters wait in the store: campaign-relay deadletter list" }
        return text
    }

    var json: String {
        let laneJSON = lanes.sorted { $0.key.rawValue < $1.key.rawValue }.map { kind, stats in
            "\"\(kind.rawValue)\":{\"delivered\":\(stats.delivered),\"skippedDuplicates\":\(stats.skippedDuplicates),\"deadLettered\":\(stats.deadLettered),\"retries\":\(stats.retries),\"position\":\(stats.position),\"backlog\":\(stats.backlog)}"
        }.joined(separator: ",")
        return "{\"delivered\":\(delivered),\"skippedDuplicates\":\(total(\.skippedDuplicates)),\"deadLettered\":\(total(\.deadLettered)),\"retries\":\(total(\.retries)),\"backlog\":\(backlog),\"pendingDeadLetters\":\(pendingDeadLetters),\"seconds\":\(seconds),\"lanes\":{\(laneJSON)}}"
    }
}

extension String {
    /// "delivered 5 events: 3 tracking hits: 2 registrations" → "delivered 5 events (3 tracking hits, 2 registrations)".
    func replacingFirstColonList() -> String {
        let parts = components(separatedBy: ": ")
        guard parts.count > 1 else { return self }
        return parts[0] + " (" + parts.dropFirst().joined(separator: ", ") + ")"
    }

    func components(separatedBy separator: String) -> [String] {
        var result: [String] = []
        var rest = Substring(self)
        while let range = rest.firstRange(of: separator) {
            result.append(String(rest[..<range.lowerBound]))
            rest = rest[range.upperBound...]
        }
        result.append(String(rest))
        return result
    }
}

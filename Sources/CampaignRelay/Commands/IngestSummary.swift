import RelayCore

/// What an ingest run stored and refused.
struct IngestSummary {
    var accepted = 0
    var rejected = 0
    var firstSequence: UInt64?
    var lastSequence: UInt64?
    var rejections: [EventLines.Rejection] = []
    var seconds = 0.0
    var linesDone = 0
    var stoppedAtLine: Int?
    var error: String?
    /// Rejections kept for the JSON summary; the count is always exact.
    static let keptRejections = 100

    mutating func accept(_ range: Range<UInt64>) {
        accepted += range.count
        if firstSequence == nil { firstSequence = range.lowerBound }
        lastSequence = range.upperBound - 1
    }

    mutating func reject(_ rejection: EventLines.Rejection) {
        rejected += 1
        if rejections.count < Self.keptRejections { rejections.append(rejection) }
    }

    var eventsPerSecond: Double { seconds > 0 ? Double(accepted) / seconds : 0 }

    func progressText(elapsed: Double, bytesRead: Int64, totalBytes: Int64?) -> String {
        let rate = elapsed > 0 ? Int(Double(accepted) / elapsed) : 0
        var text = "ingesting: \(accepted) accepted, \(rejected) rejected, \(rate) events/s"
        if let totalBytes, totalBytes > 0 { text += ", \(bytesRead * 100 / totalBytes)% of input" }
        return text
    }

    var text: String {
        var text = "accepted \(accepted) events"
        if let first = firstSequence, let last = lastSequence { text += " (sequence \(first) to \(last))" }
        text += ", rejected \(rejected) lines, in \(formatted(seconds)) s (\(Int(eventsPerSecond)) events/s, every one fdatasync'ed)"
        if let line = stoppedAtLine { text += "\nstopped at line \(line): nothing from there on was stored" }
        return text
    }

    var json: String {
        var out = "{\"accepted\":\(accepted),\"rejected\":\(rejected)"
        out += ",\"firstSequence\":" + (firstSequence.map { String($0) } ?? "null")
        out += ",\"lastSequence\":" + (lastSequence.map { String($0) } ?? "null")
        out += ",\"seconds\":\(formatted(seconds)),\"eventsPerSecond\":\(Int(eventsPerSecond))"
        out += ",\"rejections\":["
        out += rejections.map {
            "{\"line\":\($0.line),\"field\":\($0.error.field.map(JSONText.quoted) ?? "null"),\"error\":\(JSONText.quoted($0.error.message))}"
        }.joined(separator: ",")
        out += "]"
        if let line = stoppedAtLine { out += ",\"stoppedAtLine\":\(line)" }
        if let error { out += ",\"error\":\(JSONText.quoted(error))" }
        return out + "}"
    }

    private func formatted(_ value: Double) -> String {
        let millis = Int((value * 1000).rounded())
        let fraction = String(millis % 1000)
        return "\(millis / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}

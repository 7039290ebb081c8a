import RelayCore
import RelayEventJSON
import RelayServer

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
        var text = "ingesting: \(accepted) accepted, \(rejected) rejected" + (RateText.events(accepted, seconds: elapsed).map { ", " + $0 } ?? "")
        if let totalBytes, totalBytes > 0 { text += ", \(bytesRead * 100 / totalBytes)% of input" }
        return text
    }

    var text: String {
        var text = "accepted \(counted(accepted, "event"))"
        if let first = firstSequence, let last = lastSequence { text += " (sequence \(first) to \(last))" }
        let durable = accepted == 0 ? "" : " (" + (RateText.events(accepted, seconds: seconds).map { $0 + ", " } ?? "") + "every one fdatasync'ed)"
        text += ", rejected \(counted(rejected, "line")), in \(formatted(seconds)) s" + durable
        if let line = stoppedAtLine { text += "\nstopped at line \(line): nothing from there on was stored" }
        return text
    }

    var json: String { APIJSON.text(self) }

    private func formatted(_ value: Double) -> String {
        let millis = Int((value * 1000).rounded())
        let fraction = String(millis % 1000)
        return "\(millis / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}

extension IngestSummary: Encodable {
    private enum CodingKeys: String, CodingKey {
        case accepted, rejected, firstSequence, lastSequence, seconds, eventsPerSecond, rejections, stoppedAtLine, error
    }

    private enum RejectionKeys: String, CodingKey {
        case line, field, error
    }

    /// `ingest --json`: `firstSequence` and `lastSequence` are `null` when nothing was stored;
    /// `rejections` keeps the first ``keptRejections``; `stoppedAtLine` and `error` only when the
    /// log refused to store.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(accepted, forKey: .accepted)
        try container.encode(rejected, forKey: .rejected)
        try container.encode(firstSequence, forKey: .firstSequence)
        try container.encode(lastSequence, forKey: .lastSequence)
        try container.encode((seconds * 1000).rounded() / 1000, forKey: .seconds)
        try container.encode(Int(eventsPerSecond), forKey: .eventsPerSecond)
        var list = container.nestedUnkeyedContainer(forKey: .rejections)
        for rejection in rejections {
            var item = list.nestedContainer(keyedBy: RejectionKeys.self)
            try item.encode(rejection.line, forKey: .line)
            try item.encode(rejection.error.field, forKey: .field)
            try item.encode(rejection.error.message, forKey: .error)
        }
        try container.encodeIfPresent(stoppedAtLine, forKey: .stoppedAtLine)
        try container.encodeIfPresent(error, forKey: .error)
    }
}

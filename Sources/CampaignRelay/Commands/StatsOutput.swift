import RelayAggregator
import RelayServer

/// `stats --json`: the aggregates report, in the envelope of `GET /v1/deliveries`, and when a
/// server holds the data directory, `"server":{"pid":…,"url":…,"lastDurableSequence":…}`.
struct StatsOutput: Encodable {
    /// The running server, and the last sequence it has stored.
    struct Server: Encodable {
        var pid: Int32
        var url: String
        var lastDurableSequence: UInt64

        init(record: ServerRecord, lastDurableSequence: UInt64) {
            pid = record.pid
            url = record.url
            self.lastDurableSequence = lastDurableSequence
        }
    }

    var report: AggregatesReport
    var server: Server?

    private enum CodingKeys: String, CodingKey { case server }

    func encode(to encoder: any Encoder) throws {
        try report.encode(to: encoder)
        if let server {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(server, forKey: .server)
        }
    }
}

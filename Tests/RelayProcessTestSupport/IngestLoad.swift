import Foundation
package import NIOConcurrencyHelpers
package import Synchronization
import Testing

/// Clients posting batches of unique events to a relay's `POST /v1/events` and keeping score: which
/// ids were acknowledged (200), how many answers were 503 (each must carry `Retry-After`), and any
/// other answer, which a fault test treats as a failure (a disk fault is never a 500).
package final class IngestLoad: Sendable {
    package struct Score: Sendable {
        package var sent = Set<String>()
        package var acknowledged = Set<String>()
        package var unavailable = 0
        package var unavailableWithoutRetryAfter = 0
        /// Status and body of every answer other than 200 and 503.
        package var unexpected: [String] = []
        /// Requests that got no answer (the connection failed, e.g. under an injected socket fault).
        package var transportFailures = 0
        /// The bodies of the 503 answers, where the relay says why.
        package var unavailableBodies = ""
    }

    package let score = NIOLockedValueBox(Score())
    package let stopping = Atomic<Bool>(false)
    package let batchSize: Int
    package let deliveryId: String

    package init(batchSize: Int, deliveryId: String = "fault") {
        self.batchSize = batchSize
        self.deliveryId = deliveryId
    }

    /// The NDJSON of a batch of open events with message ids `ids`.
    package func body(_ ids: [String]) -> String {
        ids.map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"\#(deliveryId)"}"# }.joined(separator: "\n")
    }

    /// Sends one batch of new ids (from `next`, which it advances) and records the answer; returns
    /// the status (0 for no answer).
    @discardableResult
    package func sendBatch(_ http: TestHTTPClient, _ url: @Sendable () -> String, next: inout Int) async -> Int {
        let ids = (next..<next + batchSize).map(String.init)
        next += batchSize
        score.withLockedValue { $0.sent.formUnion(ids) }
        let answer = try? await http.post(url() + "/v1/events", body(ids), headers: [("Content-Type", "application/x-ndjson")])
        score.withLockedValue { score in
            switch answer?.status {
            case 200?:
                score.acknowledged.formUnion(ids)
            case 503?:
                score.unavailable += 1
                if answer?.headers.first(name: "Retry-After") == nil { score.unavailableWithoutRetryAfter += 1 }
                score.unavailableBodies += (answer?.body ?? "") + "\n"
            case let status?:
                score.unexpected.append("\(status) \(answer?.body.prefix(300) ?? "")")
            case nil:
                score.transportFailures += 1
            }
        }
        return answer?.status ?? 0
    }

    /// Client `client` sends batches until ``stopping`` is set or the score meets `done`, pausing
    /// after a refusal as a real sender would (shorter than the relay's `Retry-After`, so that the
    /// test stays short).
    package func run(
        client: Int, _ http: TestHTTPClient, _ url: @escaping @Sendable () -> String, until done: @Sendable (Score) -> Bool = { _ in false }
    ) async {
        var next = (client + 1) * 100_000_000
        while !stopping.load(ordering: .relaxed), !score.withLockedValue({ done($0) }) {
            if await sendBatch(http, url, next: &next) != 200 { try? await Task.sleep(for: .milliseconds(20)) }
        }
    }
}

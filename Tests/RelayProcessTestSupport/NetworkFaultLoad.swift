import Foundation
package import NIOConcurrencyHelpers
import Synchronization
import Testing

/// Paced load for the network fault tests: clients posting batches of tracking events to a relay,
/// each id sent once (a failed request is not retried: its events stay only "attempted"), and
/// what the relay acknowledged with a 200. Paced, so that the backlog a fault leaves behind drains
/// in seconds on a debug build, and steady, so that every phase of the faults sees new events.
package final class NetworkFaultLoad: Sendable {
    /// A load that has sent nothing yet.
    package init() {}

    package struct State {
        package var attempted = Set<Int>()
        package var acknowledged = Set<Int>()
        package var failures = 0
    }

    package let state = NIOLockedValueBox(State())
    private let stopping = Atomic<Bool>(false)

    package var acknowledgedCount: Int { state.withLockedValue { $0.acknowledged.count } }

    /// Runs `clients` clients against `url` until ``stop()``: each posts `batch` impressions every
    /// `pause`, under delivery `n<client>`, with ids from `(client + 1) × 10⁸` up.
    package func run(url: String, clients: Int = 2, batch: Int = 20, pause: Duration = .milliseconds(50), http: TestHTTPClient) async {
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<clients {
                group.addTask { await self.client(client, url: url, batch: batch, pause: pause, http: http) }
            }
        }
    }

    package func stop() { stopping.store(true, ordering: .relaxed) }

    private func client(_ client: Int, url: String, batch: Int, pause: Duration, http: TestHTTPClient) async {
        var next = (client + 1) * 100_000_000
        while !stopping.load(ordering: .relaxed) {
            let ids = Array(next..<next + batch)
            next += batch
            let body = ids.map { #"{"kind":"track","action":"impression","messageId":"\#($0)","deliveryId":"n\#(client)"}"# }.joined(separator: "\n")
            state.withLockedValue { $0.attempted.formUnion(ids) }
            let answer = try? await http.post(url + "/v1/events", body, headers: [("Content-Type", "application/x-ndjson")])
            state.withLockedValue { state in
                if answer?.status == 200 { state.acknowledged.formUnion(ids) } else { state.failures += 1 }
            }
            try? await Task.sleep(for: pause)
        }
    }

    /// Message ids of a `wal dump`, with how often each appears.
    package static func loggedIds(_ dump: String) throws -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for line in dump.split(separator: "\n") {
            let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            let id = try #require(Int(event["messageId"] as? String ?? ""), "\(line)")
            counts[id, default: 0] += 1
        }
        return counts
    }

    /// Message ids the emulator received (`GET /emulator/hits?messages=1`, ids in hex on the wire),
    /// with how often each arrived.
    package static func receivedIds(_ report: String) throws -> [Int: Int] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])
        var counts: [Int: Int] = [:]
        for message in object["messages"] as? [[String: Any]] ?? [] {
            let id = try #require(Int(message["messageId"] as? String ?? "", radix: 16))
            counts[id, default: 0] += message["count"] as? Int ?? 0
        }
        return counts
    }

    /// A number in a JSON object's text (`"distinct"` of `/emulator/hits`, `"lastDurableSequence"` of `/readyz`).
    package static func field(_ name: String, _ text: String) -> Int? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?[name] as? Int
    }
}

import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// The rate ceiling as a user sets it: `max-rate = 500` for the relay and `max-rate = 200` for
/// brand-b in the configuration file of a real `serve`, a backlog for each, and the hosts' own
/// clocks counting what arrives in each second.
@Suite("A rate ceiling per host and per tenant", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
struct RateCeilingDrainTests {
    static let defaultHits = 2_000
    static let brandBHits = 600

    /// `count` tracking hits as NDJSON, ids from `first`.
    static func hits(_ count: Int, from first: Int, delivery: String) -> String {
        (first..<first + count).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"\#(delivery)"}"# }
            .joined(separator: "\n")
    }

    /// The destination row of `/v1/status` named `name`.
    static func destination(_ status: String, _ name: String) -> [String: Any]? {
        let object = try? JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any]
        let destinations = object?["destinations"] as? [[String: Any]] ?? []
        return destinations.first { ($0["name"] as? String) == name && ($0["tenant"] as? String) == (name == "tracking" ? "default" : "brand-b") }
    }

    /// The accepted requests per second of the host's clock, from `/emulator/hits?seconds=1`.
    static func perSecond(_ emulator: RunningEmulator, http: TestHTTPClient) async throws -> [String: Int] {
        let body = try await http.get(emulator.url + "/emulator/hits?seconds=1").body
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return object?["acceptedBySecond"] as? [String: Int] ?? [:]
    }

    @Test(
        "max-rate 500, and 200 for brand-b: neither host gets more than its ceiling in any one second of its clock, every hit arrives once, the status page says \"paced at 500/s\" while the ceiling holds the drain back"
    )
    func ceilingsHold() async throws {
        let binary = try RelayBinary.path()
        _ = try StatusPageTests.chromium()
        let directory = temporaryDirectory("rate-ceiling")
        defer { removeTree(directory) }
        let (defaultHost, brandBHost) = (try await RunningEmulator.start(), try await RunningEmulator.start())
        let config = "\(directory)/relay.toml"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try """
        data-dir = "\(directory)/data"
        tracking-host = "\(defaultHost.url)"
        max-rate = 500

        [tenant.brand-b]
        tracking-host = "\(brandBHost.url)"
        max-rate = 200
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let server = try ChildProcess(binary, ["serve", "--config", config, "--bind", "127.0.0.1:0"])
        defer { server.stopWithoutWaiting() }
        let url = "http://127.0.0.1:\(try await server.await(#"address=127\.0\.0\.1:(\d+)"#))"
        let http = TestHTTPClient()
        let ndjson = [("Content-Type", "application/x-ndjson")]

        // The backlogs, acknowledged (durable) before the drain gets far.
        for batch in 0..<4 {
            let answer = try await http.post(url + "/v1/events", Self.hits(500, from: 1 + batch * 500, delivery: "dd"), headers: ndjson)
            #expect(answer.status == 200, "\(answer.body)")
        }
        let brandB = try await http.post(url + "/brand-b/v1/events", Self.hits(Self.brandBHits, from: 1, delivery: "db"), headers: ndjson)
        #expect(brandB.status == 200, "\(brandB.body)")

        // The ceiling holds the drain back: /v1/status says so, and so does the page in a browser.
        var paced = false
        try await waitUntil("the default tenant's tracking lane paced at its ceiling", seconds: 60) {
            let status = try await http.get(url + "/v1/status").body
            let limit = Self.destination(status, "tracking")?["concurrency"] as? [String: Any]
            paced = limit?["paced"] as? Bool == true && limit?["maximumRate"] as? Int == 500
            return paced
        }
        let browser = try DevToolsBrowser(chromium: try StatusPageTests.chromium())
        defer { browser.close() }
        let page = try await browser.open(url + "/status")
        let rate = "document.querySelector('#destinations tr[data-destination=\"tracking\"] td[data-field=\"rate\"]')"
        try await browser.waitFor("\"paced at 500/s\" on the status page", in: page, "\(rate) !== null && \(rate).textContent === 'paced at 500/s'")
        let brandBRate = "document.querySelector('#destinations tr[data-destination=\"tracking_brand-b\"] td[data-field=\"rate\"]')"
        let brandBText = try await browser.evaluate("\(brandBRate) === null ? null : \(brandBRate).textContent", in: page) as? String
        #expect(brandBText == "paced at 200/s" || brandBText == "at most 200/s", "\(brandBText ?? "no cell")")

        // Every hit arrives, once.
        try await waitUntil("both hosts to have every hit", seconds: 120) {
            let (defaultDistinct, brandBDistinct) = (
                await defaultHost.emulator.recorder.distinctHits, await brandBHost.emulator.recorder.distinctHits
            )
            return defaultDistinct == Self.defaultHits && brandBDistinct == Self.brandBHits
        }
        #expect(await defaultHost.emulator.recorder.acceptedHits == Self.defaultHits)
        #expect(await brandBHost.emulator.recorder.acceptedHits == Self.brandBHits)

        // No second of either host's clock took more than its ceiling.
        let defaultSeconds = try await Self.perSecond(defaultHost, http: http)
        let brandBSeconds = try await Self.perSecond(brandBHost, http: http)
        #expect(defaultSeconds.values.reduce(0, +) == Self.defaultHits && brandBSeconds.values.reduce(0, +) == Self.brandBHits)
        #expect(
            defaultSeconds.values.allSatisfy { $0 <= 500 }, "the default host's receipts per second: \(defaultSeconds.sorted { $0.key < $1.key })")
        #expect(brandBSeconds.values.allSatisfy { $0 <= 200 }, "brand-b's host's receipts per second: \(brandBSeconds.sorted { $0.key < $1.key })")

        // The metrics: the ceilings, and requests that waited for them.
        let metrics = try await http.get(url + "/metrics").body
        #expect(metrics.contains(#"relay_upload_max_rate{lane="tracking",tenant="default",host="\#(defaultHost.url)"} 500"#), "\(metrics)")
        #expect(metrics.contains(#"relay_upload_max_rate{lane="tracking",tenant="brand-b",host="\#(brandBHost.url)"} 200"#))
        let pacedLines = metrics.split(separator: "\n").filter { $0.hasPrefix(#"relay_upload_paced_requests_total{lane="tracking""#) }
        #expect(pacedLines.count == 2 && pacedLines.allSatisfy { (Double($0.split(separator: " ").last ?? "") ?? 0) > 0 }, "\(pacedLines)")
        print(
            "rate ceiling: the default host's busiest second took \(defaultSeconds.values.max() ?? 0) of 500 over \(defaultSeconds.count) seconds, brand-b's \(brandBSeconds.values.max() ?? 0) of 200 over \(brandBSeconds.count); \(pacedLines.joined(separator: ", "))"
        )
        await http.shutdown()
        await server.stop()
        for emulator in [defaultHost, brandBHost] { await emulator.stop() }
    }
}

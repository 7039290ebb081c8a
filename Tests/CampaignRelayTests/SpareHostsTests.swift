import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// Spare hosts as a user configures them: `tracking-host = [first, spare]` in the configuration
/// file of a real `serve`, two emulators, hits over real HTTP.
@Suite("Spare hosts: a destination of several hosts", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct SpareHostsTests {
    /// `count` tracking hits as NDJSON, ids from `first`.
    static func hits(_ count: Int, from first: Int) -> String {
        (first..<first + count).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"ds"}"# }.joined(separator: "\n")
    }

    /// The hosts of the default tenant's tracking destination in `/v1/status`: URL → breaker.
    static func breakers(_ status: String) -> [String: String] {
        let object = try? JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any]
        let destination = (object?["destinations"] as? [[String: Any]] ?? []).first { $0["name"] as? String == "tracking" }
        var found: [String: String] = [:]
        for host in destination?["hosts"] as? [[String: Any]] ?? [] {
            if let url = host["url"] as? String, let breaker = host["breaker"] as? String { found[url] = breaker }
        }
        return found
    }

    /// A real `serve` on `directory`, its configuration file the data directory and `keys`;
    /// the process and its URL.
    static func serve(in directory: String, _ keys: String) async throws -> (ChildProcess, String) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = "\(directory)/relay.toml"
        try "data-dir = \"\(directory)/data\"\n\(keys)\n".write(toFile: config, atomically: true, encoding: .utf8)
        let server = try ChildProcess(try RelayBinary.path(), ["serve", "--config", config, "--bind", "127.0.0.1:0"])
        return (server, "http://127.0.0.1:\(try await server.await(#"address=127\.0\.0\.1:(\d+)"#))")
    }

    @Test(
        "two tracking hosts share the hits, each once; then the first answers 503 to everything: its breaker opens, the spare carries the whole load, and every hit arrives once"
    )
    func spareCarriesTheLoad() async throws {
        let directory = temporaryDirectory("spare-hosts")
        defer { removeTree(directory) }
        let (first, spare) = (try await RunningEmulator.start(), try await RunningEmulator.start())
        let (server, url) = try await Self.serve(in: directory, "tracking-host = [\"\(first.url)\", \"\(spare.url)\"]\nbackoff-cap = 1")
        defer { server.stopWithoutWaiting() }
        let http = TestHTTPClient()
        let ndjson = [("Content-Type", "application/x-ndjson")]
        let (firstURL, spareURL) = (first.url, spare.url)

        // Both healthy: the hits are shared, none goes to both.
        #expect(try await http.post(url + "/v1/events", Self.hits(2_000, from: 1), headers: ndjson).status == 200)
        try await waitUntil("the two hosts to hold the 2,000 hits between them", seconds: 60) {
            let (a, b) = (await first.emulator.recorder.distinctHits, await spare.emulator.recorder.distinctHits)
            return a + b >= 2_000
        }
        let shared = (await first.emulator.recorder.acceptedHits, await spare.emulator.recorder.acceptedHits)
        #expect(shared.0 + shared.1 == 2_000, "no hit twice: \(shared)")
        #expect(shared.0 > 0 && shared.1 > 0, "both hosts carry a share: \(shared)")
        let before = Set(await first.emulator.recorder.hits.keys.map(\.messageId))
        #expect(before.isDisjoint(with: Set(await spare.emulator.recorder.hits.keys.map(\.messageId))))

        // The first host answers 503 to everything from now on.
        var failing = EmulatorFaults()
        failing.failureRate = 1
        failing.failureStatus = 503
        first.emulator.currentFaults = failing
        #expect(try await http.post(url + "/v1/events", Self.hits(2_000, from: 2_001), headers: ndjson).status == 200)
        try await waitUntil("the spare to hold every hit the first host did not take", seconds: 90) {
            await spare.emulator.recorder.distinctHits == 4_000 - shared.0
        }
        try await waitUntil("the first host's breaker open, the spare's closed, in /v1/status", seconds: 30) {
            let breakers = Self.breakers(try await http.get(url + "/v1/status").body)
            return breakers[spareURL] == "closed" && (breakers[firstURL] == "open" || breakers[firstURL] == "half-open")
        }
        #expect(await first.emulator.recorder.acceptedHits == shared.0, "the failing host accepted nothing more")
        #expect(await spare.emulator.recorder.acceptedHits == 4_000 - shared.0, "every hit once at the spare")
        let everything = Set(await first.emulator.recorder.hits.keys.map(\.messageId)).union(await spare.emulator.recorder.hits.keys.map(\.messageId))
        #expect(everything == Set((1...4_000).map { String($0, radix: 16) }))
        let metrics = try await http.get(url + "/metrics").body
        #expect(metrics.contains(#"relay_upload_host_breaker_open{lane="tracking",tenant="default",host="\#(firstURL)"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"relay_upload_host_breaker_open{lane="tracking",tenant="default",host="\#(spareURL)"} 0"#))
        #expect(metrics.contains(#"relay_upload_breaker_open{lane="tracking",tenant="default"} 0"#), "the destination is served")
        print(
            "spare hosts: shared \(shared.0) and \(shared.1) of 2,000; then the spare took \(4_000 - shared.0 - shared.1) more, the failing host none"
        )
        await http.shutdown()
        await server.stop()
        for emulator in [first, spare] { await emulator.stop() }
    }

    @Test(
        "registrations of one device token keep their log order across two marketing hosts taking turns: put in one order of arrival, each token's come as they were logged"
    )
    func registrationOrderAcrossHosts() async throws {
        let directory = temporaryDirectory("spare-marketing")
        defer { removeTree(directory) }
        let (first, spare) = (try await RunningEmulator.start(), try await RunningEmulator.start())
        let (server, url) = try await Self.serve(in: directory, "marketing-host = [\"\(first.url)\", \"\(spare.url)\"]")
        defer { server.stopWithoutWaiting() }
        let http = TestHTTPClient()
        // Three devices, twelve registrations each (a user key per step), interleaved in the log.
        let (tokens, steps) = (3, 12)
        let lines = (1...steps).flatMap { step in
            (1...tokens).map { token in
                #"{"kind":"register","platform":"android","integrationKey":"app","registrationToken":"token-\#(token)","userKey":"key-\#(token)-\#(step)"}"#
            }
        }
        let answer = try await http.post(url + "/v1/events", lines.joined(separator: "\n"), headers: [("Content-Type", "application/x-ndjson")])
        #expect(answer.status == 200, "\(answer.body)")
        try await waitUntil("the two hosts to hold the \(tokens * steps) registrations between them", seconds: 60) {
            let (a, b) = (await first.emulator.recorder.registrationArrivals.count, await spare.emulator.recorder.registrationArrivals.count)
            return a + b >= tokens * steps
        }
        let (fromFirst, fromSpare) = (await first.emulator.recorder.registrationArrivals, await spare.emulator.recorder.registrationArrivals)
        #expect(fromFirst.count + fromSpare.count == tokens * steps, "each registration once")
        #expect(!fromFirst.isEmpty && !fromSpare.isEmpty, "both hosts took some: \(fromFirst.count) and \(fromSpare.count)")
        let arrived = (fromFirst + fromSpare).sorted { $0.arrived < $1.arrived }
        for token in 1...tokens {
            let keys = arrived.filter { $0.fields["registrationToken"] == "token-\(token)" }.compactMap { $0.fields["userKey"] }
            #expect(keys == (1...steps).map { "key-\(token)-\($0)" }, "token-\(token) arrived as \(keys)")
        }
        let hosts = Set(fromFirst.compactMap { $0.fields["registrationToken"] }).intersection(fromSpare.compactMap { $0.fields["registrationToken"] })
        print(
            "spare marketing hosts: \(fromFirst.count) and \(fromSpare.count) of \(tokens * steps) registrations; tokens on both hosts: \(hosts.sorted())"
        )
        await http.shutdown()
        await server.stop()
        for emulator in [first, spare] { await emulator.stop() }
    }
}

import CampaignEmulator
import CampaignProtocol
import Foundation
import RelayCore
import RelayForwarding
import RelayProcessTestSupport
import RelayServer
import RelayTestSupport
import TestTiers
import Testing

/// Tenants as a user configures them: two `[tenant.NAME]` tenants beside the default one, one
/// Campaign emulator each, SDK and backend requests over real HTTP to a relay running in the test
/// process (nothing here needs a process of its own: `stats --tenant` is the real binary, beside it).
@Suite("Tenants: one relay, each tenant isolated", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct TenantIsolationTests {
    static let globalToken = "global-admin-token-0123456789"
    static let tokenA = "brand-a-admin-token-0123"
    static let tokenB = "brand-b-admin-token-0123"

    /// A relay serving brand-a, brand-b and the default tenant, each forwarding to its own emulator.
    struct Relay {
        let server: RunningServer
        let directory: String
        /// The configuration file of the same relay, for the command line beside it.
        let config: String
        let defaultHost: RunningEmulator
        let brandA: RunningEmulator
        let brandB: RunningEmulator
        let http = TestHTTPClient()

        var url: String { server.url }

        func stop() async {
            await server.stop()
            await http.shutdown()
            for emulator in [defaultHost, brandA, brandB] { await emulator.stop() }
            try? FileManager.default.removeItem(atPath: directory)
        }

        func get(_ path: String, token: String? = nil) async throws -> TestHTTPClient.Answer {
            try await http.get(url + path, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [])
        }

        func post(_ path: String, _ body: String, headers: [(String, String)] = []) async throws -> TestHTTPClient.Answer {
            try await http.post(url + path, body, headers: headers)
        }
    }

    /// The relay, as `serve --config` with the file written beside it would run it: brand-b's
    /// host with `brandBFaults`, brand-b's share of the log `brandBShare` bytes, retries 5 ms
    /// apart at first, and `configure` for anything else.
    static func start(
        brandBFaults: EmulatorFaults = EmulatorFaults(), brandBShare: Int? = nil, _ configure: (inout RelayServerConfiguration) -> Void = { _ in }
    ) async throws -> Relay {
        let (defaultHost, brandA, brandB) = (
            try await RunningEmulator.start(), try await RunningEmulator.start(), try await RunningEmulator.start(faults: brandBFaults)
        )
        let directory = temporaryDirectory("tenants")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = "\(directory)/relay.toml"
        try """
        data-dir = "\(directory)/data"
        tracking-host = "\(defaultHost.url)"
        marketing-host = "\(defaultHost.url)"

        [tenant.brand-a]
        tracking-host = "\(brandA.url)"
        marketing-host = "\(brandA.url)"
        integration-key = ["a-app"]
        admin-token = "\(tokenA)"

        [tenant.brand-b]
        tracking-host = "\(brandB.url)"
        marketing-host = "\(brandB.url)"
        admin-token = "\(tokenB)"
        \(brandBShare.map { "max-wal-bytes = \($0)" } ?? "")
        """.write(toFile: config, atomically: true, encoding: .utf8)
        func host(_ emulator: RunningEmulator) throws -> CampaignHost { try CampaignHost(parsing: emulator.url, role: "test") }
        let tenants = [
            TenantConfiguration(
                destinations: TenantDestinations(
                    tenant: try TenantName(validating: "brand-a"), trackingHost: try host(brandA), marketingHost: try host(brandA)),
                integrationKeys: ["a-app"], adminToken: tokenA),
            TenantConfiguration(
                destinations: TenantDestinations(
                    tenant: try TenantName(validating: "brand-b"), trackingHost: try host(brandB), marketingHost: try host(brandB)),
                adminToken: tokenB, logShareBytes: brandBShare.map(Int64.init)),
        ]
        let defaultCampaign = try host(defaultHost)
        let server = try await RunningServer.start { configuration in
            configuration.dataDirectory = "\(directory)/data"
            configuration.trackingHost = defaultCampaign
            configuration.marketingHost = defaultCampaign
            configuration.adminToken = globalToken
            configuration.tenants = tenants
            configuration.upload.backoff = Backoff(base: .milliseconds(5), cap: .milliseconds(50))
            configure(&configuration)
        }
        return Relay(server: server, directory: directory, config: config, defaultHost: defaultHost, brandA: brandA, brandB: brandB)
    }

    static func deliveries(_ answer: TestHTTPClient.Answer) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
        return object?["deliveries"] as? [[String: Any]] ?? []
    }

    @Test(
        "each tenant's hits and registrations reach its own host byte for byte; an unknown tenant is 404 and stores nothing; counts, tokens and status per tenant"
    )
    func tenantsAreApart() async throws {
        let relay = try await Self.start()
        let form = "registrationToken=tok-a&mobileAppUuid=a-app&userKey=u%20a&deviceName=Ada%27s+phone"
        // The same delivery id under both tenants and the default one.
        #expect(try await relay.get("/brand-a/r/?id=h5c4,d1,1").status == 200)
        #expect(try await relay.get("/brand-b/r/?id=h5c4,d1,1").status == 200)
        #expect(try await relay.get("/r/?id=h5c4,d1,2").status == 200)
        #expect(try await relay.get("/brand-a/r/test").status == 200)
        #expect(try await relay.post("/brand-a/nms/mobile/1/registerAndroid.jssp", form, headers: formHeaders).status == 200)
        // brand-a's keys are its own.
        let stranger = try await relay.post(
            "/brand-a/nms/mobile/1/registerAndroid.jssp", "registrationToken=t&mobileAppUuid=b-app", headers: formHeaders)
        #expect(stranger.status == 400 && stranger.body.contains("UnknownUUID"), "\(stranger.status) \(stranger.body)")
        let click = #"[{"kind":"track","action":"click","messageId":"1","deliveryId":"d1"}]"#
        #expect(try await relay.post("/brand-b/v1/events", click, headers: [("Content-Type", "application/json")]).status == 200)
        let claimed = try await relay.post(
            "/brand-b/v1/events", #"[{"kind":"track","action":"click","messageId":"2","deliveryId":"d1","tenant":"brand-a"}]"#)
        #expect(claimed.status == 400 && claimed.body.contains("tenant is given by the path"), "\(claimed.body)")

        // Unknown tenants, whatever the method or the name: 404 naming the path form, nothing stored.
        let before = try await relay.http.nextSequence(relay.url)
        for (method, path) in [
            ("GET", "/nope/r/?id=h5c4,d1,1"), ("POST", "/nope/v1/events"), ("PUT", "/nope/v1/events"), ("GET", "/Bad_Name/r/?id=h5c4,d1,1"),
            ("POST", "/nope/nms/mobile/1/registerIOS.jssp"), ("GET", "/nope/v1/deliveries"),
        ] {
            let answer = try await relay.http.send(
                method == "GET" ? .GET : method == "PUT" ? .PUT : .POST, relay.url + path, body: method == "GET" ? nil : Array(click.utf8),
                headers: [("Authorization", "Bearer \(Self.globalToken)")])
            #expect(answer.status == 404, "\(method) \(path): \(answer.status) \(answer.body)")
            #expect(answer.body.contains("/{tenant}/r/?id="), "\(method) \(path): \(answer.body)")
        }
        #expect(try await relay.http.nextSequence(relay.url) == before)

        // Forwarding: each emulator gets its own tenant's requests alone, as they were sent.
        try await eventually("brand-a's hit and registration at brand-a's host") {
            let hits = await relay.brandA.emulator.recorder.acceptedHits
            let registrations = await relay.brandA.emulator.recorder.acceptedRegistrations.count
            return hits == 1 && registrations == 1
        }
        try await eventually("brand-b's two hits at brand-b's host") { await relay.brandB.emulator.recorder.acceptedHits == 2 }
        try await eventually("the default tenant's hit at its host") { await relay.defaultHost.emulator.recorder.acceptedHits == 1 }
        let toA = await relay.brandA.emulator.recorder.lastRequests(10)
        #expect(toA.map(\.uri).sorted() == ["/nms/mobile/1/registerAndroid.jssp", "/r/?id=h5c4,d1,1"], "\(toA.map(\.uri))")
        #expect(toA.first { $0.method == "POST" }?.body == form, "the registration's body, byte for byte")
        let toB = await relay.brandB.emulator.recorder.lastRequests(10)
        #expect(toB.map(\.uri).sorted() == ["/r/?id=h1,d1,2", "/r/?id=h5c4,d1,1"], "\(toB.map(\.uri))")
        let toDefault = await relay.defaultHost.emulator.recorder.lastRequests(10)
        #expect(toDefault.map(\.uri) == ["/r/?id=h5c4,d1,2"], "\(toDefault.map(\.uri))")

        // Counting: one delivery id, three deliveries; each tenant's token sees its own, once the
        // aggregator has counted every event the log holds.
        let stored = try await relay.http.nextSequence(relay.url)
        try await eventually("the aggregator to count the \(stored - 1) events") {
            let object = try JSONSerialization.jsonObject(with: Data(try await relay.get("/v1/deliveries", token: Self.globalToken).body.utf8))
            return ((object as? [String: Any])?["aggregatedThrough"] as? Int).map { $0 + 1 >= stored } ?? false
        }
        let all = try Self.deliveries(try await relay.get("/v1/deliveries", token: Self.globalToken))
        let byTenant = Dictionary(uniqueKeysWithValues: all.map { ($0["tenant"] as? String ?? "?", $0) })
        #expect(Set(byTenant.keys) == ["brand-a", "brand-b", "default"])
        #expect(byTenant["brand-a"]?["impressions"] as? Int == 1 && byTenant["brand-a"]?["opens"] as? Int == 0)
        #expect(byTenant["brand-b"]?["impressions"] as? Int == 1 && byTenant["brand-b"]?["clicks"] as? Int == 1)
        #expect(byTenant["default"]?["opens"] as? Int == 1 && byTenant["default"]?["impressions"] as? Int == 0)
        let onlyA = try Self.deliveries(try await relay.get("/brand-a/v1/deliveries", token: Self.tokenA))
        #expect(onlyA.map { $0["tenant"] as? String } == ["brand-a"])
        #expect(try await relay.get("/brand-b/v1/deliveries/d1", token: Self.tokenB).body.contains(#""clicks":1"#))
        #expect(try await relay.get("/brand-b/v1/deliveries/d1", token: Self.globalToken).status == 200, "the relay's token sees every tenant")
        let elsewhere = try await relay.get("/brand-b/v1/deliveries", token: Self.tokenA)
        #expect(elsewhere.status == 403 && elsewhere.body.contains("brand-a"), "\(elsewhere.status) \(elsewhere.body)")
        #expect(try await relay.get("/v1/deliveries", token: Self.tokenA).status == 403)
        #expect(try await relay.get("/metrics", token: Self.tokenB).status == 403)
        #expect(try await relay.get("/brand-a/v1/deliveries").status == 401)
        let status =
            try JSONSerialization.jsonObject(with: Data(try await relay.get("/brand-a/v1/status", token: Self.tokenA).body.utf8)) as? [String: Any]
        let destinations = status?["destinations"] as? [[String: Any]] ?? []
        #expect(
            destinations.map { "\($0["name"] ?? "") \($0["tenant"] ?? "") \($0["url"] ?? "")" }.sorted() == [
                "marketing brand-a \(relay.brandA.url)", "tracking brand-a \(relay.brandA.url)",
            ])

        // stats --tenant, from the command line, beside the running server.
        let binary = try RelayBinary.path()
        let stats = try await RelayBinary.run(binary, ["stats", "--config", relay.config, "--tenant", "brand-b", "--json"])
        #expect(stats.status == 0, "\(stats.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any]
        #expect(
            (report?["deliveries"] as? [[String: Any]])?.map { "\($0["tenant"] ?? "") \($0["deliveryId"] ?? "") \($0["clicks"] ?? "")" } == [
                "brand-b d1 1"
            ])
        let badName = try await RelayBinary.run(binary, ["stats", "--config", relay.config, "--tenant", "Brand"])
        #expect(badName.status == 64 && badName.stderr.contains("--tenant"), "\(badName.status) \(badName.stderr)")
        // A tenant the file does not declare and nothing counts is a mistake, not an empty tenant.
        let undeclared = try await RelayBinary.run(binary, ["stats", "--config", relay.config, "--tenant", "brand-z"])
        #expect(
            undeclared.status == 1
                && undeclared.stderr
                    == "Error: --tenant brand-z: no such tenant: \(relay.config) declares brand-a, brand-b; counts name brand-a, brand-b, default (`default` is the tenant without a path prefix)\n",
            "\(undeclared.status) \(undeclared.stderr)")
        await relay.stop()
    }

    @Test("a tenant whose host is down fills its own share of the log and gets 503 with Retry-After, while another tenant is still acknowledged")
    func shareOfTheLog() async throws {
        let relay = try await Self.start(brandBFaults: BrokenHost.refusing.faults, brandBShare: 4096)
        var refused: TestHTTPClient.Answer?
        var taken = 0
        while refused == nil, taken < 5_000 {
            let answer = try await relay.get("/brand-b/r/?id=h\(String(taken + 1, radix: 16)),d3,1")
            if answer.status == 200 { taken += 1 } else { refused = answer }
        }
        let answer = try #require(refused, "brand-b was never refused")
        #expect(answer.status == 503 && answer.headers.first(name: "Retry-After") == "30", "\(answer.status) \(answer.headers)")
        #expect(answer.body.contains("tenant brand-b's share of the log is full") && answer.body.contains("limit 4096 bytes"), "\(answer.body)")
        #expect(taken > 10, "brand-b's share held \(taken) hits before it was full")
        // brand-a and the default tenant are still acknowledged, and brand-a's hits delivered.
        for id in 1...20 {
            #expect(try await relay.get("/brand-a/r/?id=h\(String(id, radix: 16)),d3,1").status == 200)
        }
        #expect(try await relay.get("/r/?id=h1,d3,1").status == 200)
        try await eventually("brand-a's 20 hits") { await relay.brandA.emulator.recorder.acceptedHits == 20 }
        let scrape = try await relay.get("/metrics", token: Self.globalToken).body
        #expect(
            scrape.contains(#"relay_tenant_log_limit_bytes{tenant="brand-b"} 4096"#),
            "\(scrape.split(separator: "\n").filter { $0.contains("tenant_log") })")
        // Its host back, brand-b's owed bytes drain and it is taken again.
        relay.brandB.emulator.currentFaults = EmulatorFaults()
        try await eventually("brand-b's \(taken) hits delivered") { await relay.brandB.emulator.recorder.acceptedHits == taken }
        try await eventually("brand-b taken again") { try await relay.get("/brand-b/r/?id=h1,d4,1").status == 200 }
        await relay.stop()
    }

    @Test("one tenant's host answering 503 to everything never holds another's back; its breaker, backlog and dead letters are its own")
    func failingHostIsItsTenantsAlone() async throws {
        let relay = try await Self.start(brandBFaults: BrokenHost.refusing.faults)
        for id in 1...40 {
            #expect(try await relay.get("/brand-b/r/?id=h\(String(id, radix: 16)),d2,1").status == 200)
            #expect(try await relay.get("/brand-a/r/?id=h\(String(id, radix: 16)),d2,1").status == 200)
        }
        // brand-a's 40 arrive while brand-b's host refuses every one.
        try await eventually("brand-a's 40 hits") { await relay.brandA.emulator.recorder.acceptedHits == 40 }
        #expect(await relay.brandB.emulator.recorder.acceptedHits == 0)
        try await eventually("brand-b's breaker open in the metrics") {
            try await relay.get("/metrics", token: Self.globalToken).body.contains(#"relay_upload_breaker_open{lane="tracking",tenant="brand-b"} 1"#)
        }
        let scrape = try await relay.get("/metrics", token: Self.globalToken).body
        #expect(scrape.contains(#"relay_upload_breaker_open{lane="tracking",tenant="brand-a"} 0"#), "brand-a's host answers")
        #expect(scrape.contains(#"relay_upload_backlog{lane="tracking",tenant="brand-a"} 0"#))
        #expect(scrape.contains(#"relay_upload_delivered_total{tenant="brand-a"} 40"#))
        #expect(scrape.contains(#"relay_upload_delivered_total{tenant="brand-b"} 0"#))
        #expect(scrape.contains(#"relay_dead_letters{tenant="brand-b"} 0"#))
        let promtool = try #require(
            ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }, "promtool is needed")
        let file = "\(relay.directory)/scrape.txt"
        try scrape.write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await RelayBinary.run("/bin/sh", ["-c", "'\(promtool)' check metrics < '\(file)'"])
        #expect(check.status == 0, "promtool: \(check.stdout) \(check.stderr)")
        let statusB =
            try JSONSerialization.jsonObject(with: Data(try await relay.get("/brand-b/v1/status", token: Self.tokenB).body.utf8)) as? [String: Any]
        let tracking = (statusB?["destinations"] as? [[String: Any]])?.first { $0["name"] as? String == "tracking" }
        #expect(tracking?["tenant"] as? String == "brand-b")
        #expect((tracking?["backlog"] as? Int ?? 0) > 0 && tracking?["lastError"] != nil, "\(String(describing: tracking))")

        // Healed: brand-b's host takes everything it was owed.
        relay.brandB.emulator.currentFaults = EmulatorFaults()
        try await eventually("brand-b's 40 hits once its host answers") { await relay.brandB.emulator.recorder.acceptedHits == 40 }

        // A registration brand-b's host refuses for good is brand-b's dead letter alone.
        var refusing = EmulatorFaults()
        refusing.knownIntegrationKeys = ["known"]
        relay.brandB.emulator.currentFaults = refusing
        #expect(
            try await relay.post("/brand-b/nms/mobile/1/registerIOS.jssp", "registrationToken=t&mobileAppUuid=unknown", headers: formHeaders).status
                == 200)
        try await eventually("brand-b's dead letter") {
            try await relay.get("/brand-b/v1/deadletters", token: Self.tokenB).body.contains(#""tenant":"brand-b""#)
        }
        #expect(try await relay.get("/brand-a/v1/deadletters", token: Self.tokenA).body == #"{"deadLetters":[]}"#)
        try await eventually("relay_dead_letters{tenant=\"brand-b\"} 1") {
            try await relay.get("/metrics", token: Self.globalToken).body.contains(#"relay_dead_letters{tenant="brand-b"} 1"#)
        }
        await relay.stop()
    }

    /// How brand-b's host fails in ``latencyIsolation(_:)``.
    enum BrokenHost: String, CustomStringConvertible, CaseIterable {
        /// 503 to every request.
        case refusing
        /// No answer within the relay's request timeout.
        case hanging

        var description: String { rawValue }

        var faults: EmulatorFaults {
            var faults = EmulatorFaults()
            switch self {
            case .refusing:
                faults.failureRate = 1
                faults.failureStatus = 503
            case .hanging:
                faults.latencyMilliseconds = 60_000
            }
            return faults
        }
    }

    /// Sends hits to each tenant in turn (brand-a, brand-b, brand-a, …), one at a time, at least
    /// `count` each and then until `enough` says so (asked every 10 hits), and returns when each of
    /// brand-a's was acknowledged, by message id (wall-clock seconds, the clock the emulators
    /// record receipts on).
    static func sendAlternating(
        _ relay: Relay, count: Int, delivery: String, until enough: () async throws -> Bool = { true }
    ) async throws -> [String: Double] {
        var acknowledged: [String: Double] = [:]
        var id = 0
        while true {
            if id >= count, id % 10 == 0, try await enough() { break }
            id += 1
            let message = String(id, radix: 16)
            #expect(try await relay.get("/brand-a/r/?id=h\(message),\(delivery),1").status == 200)
            acknowledged[message] = SystemClock.wallSeconds()
            #expect(try await relay.get("/brand-b/r/?id=h\(message),\(delivery),1").status == 200)
        }
        return acknowledged
    }

    /// brand-b's failed attempts so far (`relay_upload_retries_total{tenant="brand-b"}`).
    static func brandBRetries(_ relay: Relay) async throws -> Int {
        let scrape = try await relay.get("/metrics", token: Self.globalToken).body
        let line = scrape.split(separator: "\n").first { $0.hasPrefix(#"relay_upload_retries_total{tenant="brand-b"} "#) }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// The 99th percentile of brand-a's delays from acknowledgement to its host's receipt, once
    /// every hit of `acknowledged` has arrived.
    static func receiptDelayP99(_ relay: Relay, _ acknowledged: [String: Double], delivery: String) async throws -> Double {
        var received: [String: Double] = [:]
        try await eventually("brand-a's \(acknowledged.count) hits of \(delivery) at its host", seconds: 120) {
            for request in await relay.brandA.emulator.recorder.lastRequests(100_000) {
                guard let id = request.uri.firstMatch(of: /id=h([0-9a-f]+),([a-z0-9]+),1/), id.output.2 == delivery else { continue }
                received[String(id.output.1)] = request.time
            }
            return acknowledged.keys.allSatisfy { received[$0] != nil }
        }
        let delays = acknowledged.map { id, ackedAt in max(0, (received[id] ?? .infinity) - ackedAt) }.sorted()
        return delays[min(delays.count - 1, delays.count * 99 / 100)]
    }

    @Test(
        "brand-a's hits reach its host as soon with brand-b's host refusing or hanging as with both up: p99 from acknowledgement to receipt within 2× + 0.5 s",
        arguments: BrokenHost.allCases)
    func latencyIsolation(_ broken: BrokenHost) async throws {
        // brand-b's lane keeps trying (retries 5 to 50 ms apart, no breaker): the most a failing
        // host can ask of the relay, each attempt at the hanging host waiting out 3 s.
        let relay = try await Self.start {
            $0.upload = UploadConfiguration(
                requestTimeout: .seconds(3), backoff: Backoff(base: .milliseconds(5), cap: .milliseconds(50)), breakerThreshold: 1_000_000)
        }
        let count = 150
        let bothUp = try await Self.sendAlternating(relay, count: count, delivery: "up")
        let upP99 = try await Self.receiptDelayP99(relay, bothUp, delivery: "up")
        try await eventually("brand-b's \(count) hits at its host") { await relay.brandB.emulator.recorder.acceptedHits == count }

        relay.brandB.emulator.currentFaults = broken.faults
        // The fault holds once brand-b's lane has met it: a 503, or no answer within its timeout.
        #expect(try await relay.get("/brand-b/r/?id=h1,probe,1").status == 200)
        try await eventually("brand-b's lane failing against its \(broken) host") {
            let status = try JSONSerialization.jsonObject(with: Data(try await relay.get("/brand-b/v1/status", token: Self.tokenB).body.utf8))
            let destinations = (status as? [String: Any])?["destinations"] as? [[String: Any]] ?? []
            return destinations.contains { $0["name"] as? String == "tracking" && $0["lastError"] is String }
        }
        // The load goes on until brand-b's lane has failed twice more: against the hanging
        // host, two timeouts, so brand-a's hits are sent all through brand-b's waits.
        let retriesBefore = try await Self.brandBRetries(relay)
        let bDown = try await Self.sendAlternating(relay, count: count, delivery: "down") {
            try await Self.brandBRetries(relay) >= retriesBefore + 2
        }
        let downP99 = try await Self.receiptDelayP99(relay, bDown, delivery: "down")
        print(
            "tenant latency isolation, brand-b's host \(broken): brand-a's p99 from acknowledgement to receipt \(Int(upP99 * 1000)) ms with both up, \(Int(downP99 * 1000)) ms with brand-b's host \(broken)"
        )
        #expect(
            downP99 <= 2 * upP99 + 0.5,
            "brand-a's p99 rose from \(Int(upP99 * 1000)) ms to \(Int(downP99 * 1000)) ms while brand-b's host was \(broken)")
        #expect(await relay.brandB.emulator.recorder.acceptedHits == count, "brand-b's host took none of them while \(broken)")
        print("brand-b's failed attempts during the load: \(try await Self.brandBRetries(relay) - retriesBefore), brand-a's hits \(bDown.count)")
        await relay.stop()
    }
}

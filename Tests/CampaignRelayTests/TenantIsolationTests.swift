import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// Tenants as a user runs them: `serve --config` with two `[tenant.NAME]` tables and the default
/// tenant's hosts, one Campaign emulator each, SDK and backend requests over real HTTP.
@Suite("Tenants: one relay, each tenant isolated", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct TenantIsolationTests {
    static let globalToken = "global-admin-token-0123456789"
    static let tokenA = "brand-a-admin-token-0123"
    static let tokenB = "brand-b-admin-token-0123"

    /// A relay serving brand-a, brand-b and the default tenant, each forwarding to its own emulator.
    struct Relay {
        let child: ChildProcess
        let url: String
        let directory: String
        let config: String
        let defaultHost: RunningEmulator
        let brandA: RunningEmulator
        let brandB: RunningEmulator
        let http = TestHTTPClient()

        func stop() async {
            await child.stop()
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

    static func start(brandBFaults: EmulatorFaults = EmulatorFaults(), brandBShare: Int? = nil) async throws -> Relay {
        let binary = try RelayBinary.path()
        let (defaultHost, brandA, brandB) = (
            try await RunningEmulator.start(), try await RunningEmulator.start(), try await RunningEmulator.start(faults: brandBFaults)
        )
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tenants-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = "\(directory)/relay.toml"
        try """
        data-dir = "\(directory)/data"
        tracking-host = "\(defaultHost.url)"
        marketing-host = "\(defaultHost.url)"
        backoff-base = 5
        backoff-cap = 0.05

        [serve]
        admin-token = "\(globalToken)"

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
        let child = try ChildProcess(binary, ["serve", "--config", config, "--bind", "127.0.0.1:0", "--log-level", "notice"])
        let port = try await child.await(#"address=127\.0\.0\.1:(\d+)"#)
        return Relay(
            child: child, url: "http://127.0.0.1:\(port)", directory: directory, config: config, defaultHost: defaultHost, brandA: brandA,
            brandB: brandB)
    }

    /// Waits, polling, until `condition` holds; fails the test after 60 s.
    static func eventually(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("waited 60 s for \(what)")
        throw WaitedTooLong(what: what)
    }

    struct WaitedTooLong: Error {
        var what: String
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
        try await Self.eventually("brand-a's hit and registration at brand-a's host") {
            let hits = await relay.brandA.emulator.recorder.acceptedHits
            let registrations = await relay.brandA.emulator.recorder.acceptedRegistrations.count
            return hits == 1 && registrations == 1
        }
        try await Self.eventually("brand-b's two hits at brand-b's host") { await relay.brandB.emulator.recorder.acceptedHits == 2 }
        try await Self.eventually("the default tenant's hit at its host") { await relay.defaultHost.emulator.recorder.acceptedHits == 1 }
        let toA = await relay.brandA.emulator.recorder.lastRequests(10)
        #expect(toA.map(\.uri).sorted() == ["/nms/mobile/1/registerAndroid.jssp", "/r/?id=h5c4,d1,1"], "\(toA.map(\.uri))")
        #expect(toA.first { $0.method == "POST" }?.body == form, "the registration's body, byte for byte")
        let toB = await relay.brandB.emulator.recorder.lastRequests(10)
        #expect(toB.map(\.uri).sorted() == ["/r/?id=h1,d1,2", "/r/?id=h5c4,d1,1"], "\(toB.map(\.uri))")
        let toDefault = await relay.defaultHost.emulator.recorder.lastRequests(10)
        #expect(toDefault.map(\.uri) == ["/r/?id=h5c4,d1,2"], "\(toDefault.map(\.uri))")

        // Counting: one delivery id, three deliveries; each tenant's token sees its own.
        try await Self.eventually("three rows for d1") {
            try Self.deliveries(try await relay.get("/v1/deliveries", token: Self.globalToken)).count == 3
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
        await relay.stop()
    }

    @Test("a tenant whose host is down fills its own share of the log and gets 503 with Retry-After, while another tenant is still acknowledged")
    func shareOfTheLog() async throws {
        var failing = EmulatorFaults()
        failing.failureRate = 1
        failing.failureStatus = 503
        let relay = try await Self.start(brandBFaults: failing, brandBShare: 4096)
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
        try await Self.eventually("brand-a's 20 hits") { await relay.brandA.emulator.recorder.acceptedHits == 20 }
        let scrape = try await relay.get("/metrics", token: Self.globalToken).body
        #expect(
            scrape.contains(#"relay_tenant_log_limit_bytes{tenant="brand-b"} 4096"#),
            "\(scrape.split(separator: "\n").filter { $0.contains("tenant_log") })")
        // Its host back, brand-b's owed bytes drain and it is taken again.
        relay.brandB.emulator.currentFaults = EmulatorFaults()
        try await Self.eventually("brand-b's \(taken) hits delivered") { await relay.brandB.emulator.recorder.acceptedHits == taken }
        try await Self.eventually("brand-b taken again") { try await relay.get("/brand-b/r/?id=h1,d4,1").status == 200 }
        await relay.stop()
    }

    @Test("one tenant's host answering 503 to everything never holds another's back; its breaker, backlog and dead letters are its own")
    func failingHostIsItsTenantsAlone() async throws {
        var failing = EmulatorFaults()
        failing.failureRate = 1
        failing.failureStatus = 503
        let relay = try await Self.start(brandBFaults: failing)
        for id in 1...40 {
            #expect(try await relay.get("/brand-b/r/?id=h\(String(id, radix: 16)),d2,1").status == 200)
            #expect(try await relay.get("/brand-a/r/?id=h\(String(id, radix: 16)),d2,1").status == 200)
        }
        // brand-a's 40 arrive while brand-b's host refuses every one.
        try await Self.eventually("brand-a's 40 hits") { await relay.brandA.emulator.recorder.acceptedHits == 40 }
        #expect(await relay.brandB.emulator.recorder.acceptedHits == 0)
        try await Self.eventually("brand-b's breaker open in the metrics") {
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
        try await Self.eventually("brand-b's 40 hits once its host answers") { await relay.brandB.emulator.recorder.acceptedHits == 40 }

        // A registration brand-b's host refuses for good is brand-b's dead letter alone.
        var refusing = EmulatorFaults()
        refusing.knownIntegrationKeys = ["known"]
        relay.brandB.emulator.currentFaults = refusing
        #expect(
            try await relay.post("/brand-b/nms/mobile/1/registerIOS.jssp", "registrationToken=t&mobileAppUuid=unknown", headers: formHeaders).status
                == 200)
        try await Self.eventually("brand-b's dead letter") {
            try await relay.get("/brand-b/v1/deadletters", token: Self.tokenB).body.contains(#""tenant":"brand-b""#)
        }
        #expect(try await relay.get("/brand-a/v1/deadletters", token: Self.tokenA).body == #"{"deadLetters":[]}"#)
        try await Self.eventually("relay_dead_letters{tenant=\"brand-b\"} 1") {
            try await relay.get("/metrics", token: Self.globalToken).body.contains(#"relay_dead_letters{tenant="brand-b"} 1"#)
        }
        await relay.stop()
    }
}

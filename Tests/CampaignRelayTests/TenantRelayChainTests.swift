import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// Tenants through a relay chain, with real processes: an edge `serve --upstream-relay` that
/// declares its tenants without hosts and hands every event on with its tenant, and a central
/// `serve --relay-token` that forwards each event to that tenant's Campaign emulator.
@Suite("Tenants through a relay chain", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct TenantRelayChainTests {
    static let token = "relay-token-0123456789"
    static let form = "registrationToken=tok-a&mobileAppUuid=a-app&userKey=u%20a&deviceName=Ada%27s+phone"

    /// The scratch directory, the binary and the two processes' files.
    struct Chain {
        let binary: String
        let root: String
        var edgeConfig: String { "\(root)/edge.toml" }
        var centralConfig: String { "\(root)/central.toml" }
        var centralDirectory: String { "\(root)/central" }

        /// Writes the central relay's file: `tenants` with their emulators, no default hosts.
        func writeCentral(_ tenants: [(name: String, host: RunningEmulator)]) throws {
            let tables = tenants.map { tenant in
                """

                [tenant.\(tenant.name)]
                tracking-host = "\(tenant.host.url)"
                marketing-host = "\(tenant.host.url)"
                """
            }
            try
                ("data-dir = \"\(centralDirectory)\"\nbackoff-cap = 0.5\n\n[serve]\nrelay-token = \"\(TenantRelayChainTests.token)\"\n"
                + tables.joined(separator: "\n")).write(toFile: centralConfig, atomically: true, encoding: .utf8)
        }

        /// Starts the central relay on `port` (0: any) and returns it with the port it bound.
        func startCentral(port: Int = 0) async throws -> (ChildProcess, Int) {
            let child = try ChildProcess(binary, ["serve", "--config", centralConfig, "--bind", "127.0.0.1:\(port)"])
            let bound = try await child.await(#"address=127\.0\.0\.1:(\d+)"#)
            return (child, Int(bound) ?? 0)
        }

        /// Starts the edge: brand-a and brand-b declared without hosts, everything handed to `central`.
        func startEdge(central: Int) async throws -> (ChildProcess, String) {
            try """
            data-dir = "\(root)/edge"
            backoff-cap = 0.5

            [serve]
            upstream-relay = "http://127.0.0.1:\(central)"
            upstream-token = "\(TenantRelayChainTests.token)"

            [tenant.brand-a]

            [tenant.brand-b]
            """.write(toFile: edgeConfig, atomically: true, encoding: .utf8)
            let child = try ChildProcess(binary, ["serve", "--config", edgeConfig, "--bind", "127.0.0.1:0"])
            return (child, "http://127.0.0.1:\(try await child.await(#"address=127\.0\.0\.1:(\d+)"#))")
        }
    }

    /// The `upstream` object of a relay's `/readyz`.
    static func upstream(_ http: TestHTTPClient, _ url: String) async throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(try await http.get(url + "/readyz").body.utf8)) as? [String: Any]
        return object?["upstream"] as? [String: Any] ?? [:]
    }

    /// The backlog of every destination in a relay's `/v1/status`, by `name_tenant`.
    static func backlogs(_ http: TestHTTPClient, _ url: String) async throws -> [String: Int] {
        let object = try JSONSerialization.jsonObject(with: Data(try await http.get(url + "/v1/status").body.utf8)) as? [String: Any]
        let destinations = object?["destinations"] as? [[String: Any]] ?? []
        return Dictionary(
            uniqueKeysWithValues: destinations.map { ("\($0["name"] ?? "")_\($0["tenant"] ?? "")", $0["backlog"] as? Int ?? -1) })
    }

    /// What an emulator was sent, sorted: `METHOD uri`.
    static func requests(_ emulator: RunningEmulator) async -> [String] {
        await emulator.emulator.recorder.lastRequests(100).map { "\($0.method) \($0.uri)" }.sorted()
    }

    /// Waits until brand-a's host has one hit and the registration and brand-b's host one hit, then
    /// until neither relay owes anything more (the edge's relay lane and each lane of the central
    /// relay); then expects exactly these requests at each host: `hitA` and the registration, byte
    /// for byte, at brand-a's, `hitB` at brand-b's.
    static func expectDelivered(
        brandA: RunningEmulator, hit hitA: String, brandB: RunningEmulator, hit hitB: String, http: TestHTTPClient, edge: String, central: String
    ) async throws {
        try await waitUntil("brand-a's hit and registration at brand-a's host, brand-b's hit at brand-b's", seconds: 60) {
            let (hitsA, registrationsA) = (await brandA.emulator.recorder.acceptedHits, await brandA.emulator.recorder.acceptedRegistrations.count)
            let hitsB = await brandB.emulator.recorder.acceptedHits
            return hitsA == 1 && registrationsA == 1 && hitsB == 1
        }
        try await waitUntil("the edge and the central relay to owe nothing", seconds: 60) {
            let owed = try await Self.upstream(http, edge)["backlog"] as? Int
            let backlogs = try await Self.backlogs(http, central)
            return owed == 0 && backlogs.count == 4 && backlogs.values.allSatisfy { $0 == 0 }
        }
        #expect(
            try await Self.backlogs(http, central) == ["tracking_brand-a": 0, "marketing_brand-a": 0, "tracking_brand-b": 0, "marketing_brand-b": 0])
        #expect(await Self.requests(brandA) == ["GET \(hitA)", "POST /nms/mobile/1/registerAndroid.jssp"])
        #expect(await brandA.emulator.recorder.lastRequests(100).first { $0.method == "POST" }?.body == Self.form, "byte for byte")
        #expect(await Self.requests(brandB) == ["GET \(hitB)"])
    }

    @Test(
        "an edge declaring brand-a and brand-b without hosts hands each event on with its tenant; the central relay forwards each to its own tenant's host, the registration byte for byte, none to the other"
    )
    func eachTenantToItsOwnHost() async throws {
        let chain = Chain(binary: try RelayBinary.path(), root: temporaryDirectory("tenant-chain"))
        defer { removeTree(chain.root) }
        let (brandA, brandB) = (try await RunningEmulator.start(), try await RunningEmulator.start())
        try chain.writeCentral([("brand-a", brandA), ("brand-b", brandB)])
        let (central, centralPort) = try await chain.startCentral()
        defer { central.stopWithoutWaiting() }
        let (edge, edgeURL) = try await chain.startEdge(central: centralPort)
        defer { edge.stopWithoutWaiting() }
        let http = TestHTTPClient()

        #expect(try await http.get(edgeURL + "/brand-a/r/?id=h5c4,d1,1").status == 200)
        #expect(try await http.get(edgeURL + "/brand-b/r/?id=h5c5,d1,2").status == 200)
        #expect(try await http.post(edgeURL + "/brand-a/nms/mobile/1/registerAndroid.jssp", Self.form, headers: formHeaders).status == 200)

        let centralURL = "http://127.0.0.1:\(centralPort)"
        try await Self.expectDelivered(
            brandA: brandA, hit: "/r/?id=h5c4,d1,1", brandB: brandB, hit: "/r/?id=h5c5,d1,2", http: http, edge: edgeURL, central: centralURL)
        await http.shutdown()
        for emulator in [brandA, brandB] { await emulator.stop() }
    }

    @Test(
        "a central relay that does not declare brand-b answers 422 to the edge's batch holding brand-b's event and stores none of it; the edge keeps the batch and, once the central relay declares brand-b, everything arrives exactly once"
    )
    func undeclaredTenantWaitsAtTheEdge() async throws {
        let chain = Chain(binary: try RelayBinary.path(), root: temporaryDirectory("tenant-chain-422"))
        defer { removeTree(chain.root) }
        let (brandA, brandB) = (try await RunningEmulator.start(), try await RunningEmulator.start())
        // The central relay's log keeps every segment, so that `wal dump` shows all it stored.
        try await DumpedLog.keepEverything(chain.centralDirectory)
        try chain.writeCentral([("brand-a", brandA)])
        var (central, centralPort) = try await chain.startCentral()
        let centralURL = "http://127.0.0.1:\(centralPort)"
        let (edge, edgeURL) = try await chain.startEdge(central: centralPort)
        defer { edge.stopWithoutWaiting() }
        let http = TestHTTPClient()

        // brand-b's event first: every batch the edge sends starts with it.
        #expect(try await http.get(edgeURL + "/brand-b/r/?id=h11,d2,2").status == 200)
        #expect(try await http.get(edgeURL + "/brand-a/r/?id=h10,d2,1").status == 200)
        #expect(try await http.post(edgeURL + "/brand-a/nms/mobile/1/registerAndroid.jssp", Self.form, headers: formHeaders).status == 200)
        var upstream: [String: Any] = [:]
        try await waitUntil("the edge to hold all three after a 422", seconds: 60) {
            upstream = try await Self.upstream(http, edgeURL)
            return upstream["backlog"] as? Int == 3 && (upstream["lastFailure"] as? String)?.contains("HTTP 422") == true
        }
        #expect(
            (upstream["lastFailure"] as? String)?.contains("tenant brand-b of relay ") == true
                && (upstream["lastFailure"] as? String)?.contains("is not declared on this relay") == true, "\(upstream)")
        let centralReady = try await http.get(centralURL + "/readyz").body
        #expect(centralReady.contains(#""lastDurableSequence":0"#), "the central relay stored nothing of the batch: \(centralReady)")
        #expect(await brandA.emulator.recorder.receivedRequests == 0)

        // The central relay again, on the same address, declaring brand-b.
        await central.stop()
        try chain.writeCentral([("brand-a", brandA), ("brand-b", brandB)])
        (central, _) = try await chain.startCentral(port: centralPort)
        try await Self.expectDelivered(
            brandA: brandA, hit: "/r/?id=h10,d2,1", brandB: brandB, hit: "/r/?id=h11,d2,2", http: http, edge: edgeURL, central: centralURL)
        await central.stop()
        await http.shutdown()
        for emulator in [brandA, brandB] { await emulator.stop() }

        // Exactly once in the central relay's log, each with its tenant.
        let log = try await DumpedLog.read(chain.binary, chain.centralDirectory)
        #expect(
            log.events.map { "\($0.sequence) \($0.line["kind"] ?? "") \($0.line["tenant"] ?? "default")" } == [
                "1 track brand-b", "2 track brand-a", "3 register brand-a",
            ], "\(log.events.map(\.line))")
    }
}

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

/// Tenants through a relay chain, each relay running in the test process on a port of its own: an
/// edge with `upstreamRelay` that declares its tenants without hosts and hands every event on with
/// its tenant, and a central relay with a `relayToken` that forwards each event to that tenant's
/// Campaign emulator (nothing here needs a process of its own: `wal dump` is the real binary).
@Suite("Tenants through a relay chain", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct TenantRelayChainTests {
    static let token = "relay-token-0123456789"
    static let form = "registrationToken=tok-a&mobileAppUuid=a-app&userKey=u%20a&deviceName=Ada%27s+phone"

    /// The scratch directory of the two relays.
    struct Chain {
        let root: String
        var centralDirectory: String { "\(root)/central" }

        /// Starts the central relay on `port` (0: any), with `tenants` and their emulators and no
        /// default hosts.
        func startCentral(_ tenants: [(name: String, host: RunningEmulator)], port: Int = 0) async throws -> RunningServer {
            let declared = try tenants.map { tenant in
                let host = try CampaignHost(parsing: tenant.host.url, role: "test")
                return TenantConfiguration(
                    destinations: TenantDestinations(tenant: try TenantName(validating: tenant.name), trackingHost: host, marketingHost: host))
            }
            return try await RunningServer.start { configuration in
                configuration.port = port
                configuration.dataDirectory = centralDirectory
                configuration.relayToken = TenantRelayChainTests.token
                configuration.tenants = declared
                configuration.upload.backoff = Backoff(base: .milliseconds(100), cap: .milliseconds(500))
            }
        }

        /// Starts the edge: brand-a and brand-b declared without hosts, everything handed to `central`.
        func startEdge(central: RunningServer) async throws -> RunningServer {
            let upstream = try CampaignHost(parsing: central.url, role: "upstream relay")
            let declared = try ["brand-a", "brand-b"].map {
                TenantConfiguration(destinations: TenantDestinations(tenant: try TenantName(validating: $0), trackingHost: nil, marketingHost: nil))
            }
            return try await RunningServer.start { configuration in
                configuration.dataDirectory = "\(root)/edge"
                configuration.upstreamRelay = upstream
                configuration.upstreamToken = TenantRelayChainTests.token
                configuration.tenants = declared
                configuration.upload.backoff = Backoff(base: .milliseconds(100), cap: .milliseconds(500))
            }
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
        let chain = Chain(root: temporaryDirectory("tenant-chain"))
        defer { removeTree(chain.root) }
        let (brandA, brandB) = (try await RunningEmulator.start(), try await RunningEmulator.start())
        let central = try await chain.startCentral([("brand-a", brandA), ("brand-b", brandB)])
        let edge = try await chain.startEdge(central: central)
        let http = TestHTTPClient()

        #expect(try await http.get(edge.url + "/brand-a/r/?id=h5c4,d1,1").status == 200)
        #expect(try await http.get(edge.url + "/brand-b/r/?id=h5c5,d1,2").status == 200)
        #expect(try await http.post(edge.url + "/brand-a/nms/mobile/1/registerAndroid.jssp", Self.form, headers: formHeaders).status == 200)

        try await Self.expectDelivered(
            brandA: brandA, hit: "/r/?id=h5c4,d1,1", brandB: brandB, hit: "/r/?id=h5c5,d1,2", http: http, edge: edge.url, central: central.url)
        await http.shutdown()
        await edge.stop()
        await central.stop()
        for emulator in [brandA, brandB] { await emulator.stop() }
    }

    @Test(
        "a central relay that does not declare brand-b answers 422 to the edge's batch holding brand-b's event and stores none of it; the edge keeps the batch and, once the central relay declares brand-b, everything arrives exactly once"
    )
    func undeclaredTenantWaitsAtTheEdge() async throws {
        let chain = Chain(root: temporaryDirectory("tenant-chain-422"))
        defer { removeTree(chain.root) }
        let (brandA, brandB) = (try await RunningEmulator.start(), try await RunningEmulator.start())
        // The central relay's log keeps every segment, so that `wal dump` shows all it stored.
        try await DumpedLog.keepEverything(chain.centralDirectory)
        var central = try await chain.startCentral([("brand-a", brandA)])
        let centralURL = central.url
        let edge = try await chain.startEdge(central: central)
        let http = TestHTTPClient()

        // brand-b's event first: every batch the edge sends starts with it.
        #expect(try await http.get(edge.url + "/brand-b/r/?id=h11,d2,2").status == 200)
        #expect(try await http.get(edge.url + "/brand-a/r/?id=h10,d2,1").status == 200)
        #expect(try await http.post(edge.url + "/brand-a/nms/mobile/1/registerAndroid.jssp", Self.form, headers: formHeaders).status == 200)
        var upstream: [String: Any] = [:]
        try await waitUntil("the edge to hold all three after a 422", seconds: 60) {
            upstream = try await Self.upstream(http, edge.url)
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
        central = try await chain.startCentral([("brand-a", brandA), ("brand-b", brandB)], port: central.port)
        try await Self.expectDelivered(
            brandA: brandA, hit: "/r/?id=h10,d2,1", brandB: brandB, hit: "/r/?id=h11,d2,2", http: http, edge: edge.url, central: centralURL)
        await edge.stop()
        await central.stop()
        await http.shutdown()
        for emulator in [brandA, brandB] { await emulator.stop() }

        // Exactly once in the central relay's log, each with its tenant.
        let log = try await DumpedLog.read(try RelayBinary.path(), chain.centralDirectory)
        #expect(
            log.events.map { "\($0.sequence) \($0.line["kind"] ?? "") \($0.line["tenant"] ?? "default")" } == [
                "1 track brand-b", "2 track brand-a", "3 register brand-a",
            ], "\(log.events.map(\.line))")
    }
}

import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// The commands besides `serve` with tenants, as an operator runs them in the second hour: each
/// tenant's events go to that tenant's hosts, whether `replay`, `upload` or `ingest` beside a
/// running server moves them, and nothing of a tenant is dropped without a word.
@Suite("Tenants on the command line: replay, upload, ingest beside serve", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct TenantCommandTests {
    /// Five events: a hit of the default tenant, two hits and a registration of brand-a, a hit of
    /// brand-b, in that order (line 1 to 5).
    static let events = """
        {"kind":"track","action":"open","messageId":"1","deliveryId":"d1"}
        {"kind":"track","action":"open","messageId":"2","deliveryId":"d1","tenant":"brand-a"}
        {"kind":"track","action":"click","messageId":"3","deliveryId":"d1","tenant":"brand-a"}
        {"kind":"register","platform":"android","integrationKey":"a-app","registrationToken":"a-token","userKey":"ada","tenant":"brand-a"}
        {"kind":"track","action":"impression","messageId":"4","deliveryId":"d2","tenant":"brand-b"}

        """

    /// The stand-in hosts: the default tenant's, brand-a's and brand-b's.
    struct Hosts {
        let defaultHost: RunningEmulator
        let brandA: RunningEmulator
        let brandB: RunningEmulator

        static func start() async throws -> Hosts {
            Hosts(
                defaultHost: try await RunningEmulator.start(), brandA: try await RunningEmulator.start(), brandB: try await RunningEmulator.start())
        }

        func stop() async {
            await defaultHost.stop()
            await brandA.stop()
            await brandB.stop()
        }

        /// The URIs `host` received, sorted.
        static func uris(_ host: RunningEmulator) async -> [String] {
            await host.emulator.recorder.lastRequests(100).map(\.uri).sorted()
        }
    }

    /// A configuration file declaring the tenants `declared` (of brand-a, brand-b) with their hosts.
    static func config(_ hosts: Hosts, directory: String, declared: [String] = ["brand-a", "brand-b"], name: String = "relay.toml") throws -> String {
        let path = "\(directory)/\(name)"
        var text = """
            data-dir = "\(directory)/data"
            tracking-host = "\(hosts.defaultHost.url)"
            marketing-host = "\(hosts.defaultHost.url)"

            """
        for tenant in declared {
            let url = tenant == "brand-a" ? hosts.brandA.url : hosts.brandB.url
            text += "[tenant.\(tenant)]\ntracking-host = \"\(url)\"\nmarketing-host = \"\(url)\"\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A data directory holding ``events``, stored by `ingest --config`.
    static func ingested(_ binary: String, config: String) async throws {
        let ingest = try await RelayBinary.run(binary, ["ingest", "--config", config, "-"], input: Data(events.utf8))
        try #require(ingest.status == 0, "\(ingest.stdout) \(ingest.stderr)")
    }

    @Test("replay --config: the dry run counts each tenant toward its own hosts, the replay sends them there and counts them per tenant")
    func replayPerTenant() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("tenant-replay")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let hosts = try await Hosts.start()
        let config = try Self.config(hosts, directory: directory)
        try await Self.ingested(binary, config: config)

        let dry = try await RelayBinary.run(binary, ["replay", "--config", config, "--from", "1", "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any], "\(dry.stdout)")
        #expect((counts["tracking"] as? [String: Any])?["events"] as? Int == 1, "the default tenant's one hit: \(dry.stdout)")
        #expect((counts["marketing"] as? [String: Any])?["events"] as? Int == 0)
        let tenants = (counts["tenants"] as? [[String: Any]] ?? []).map { tenant in
            let tracking = tenant["tracking"] as? [String: Any]
            let marketing = tenant["marketing"] as? [String: Any]
            let declared = (tenant["declared"] as? Bool) == true ? "declared" : "undeclared"
            return "\(tenant["tenant"] ?? "") \(declared) \(tracking?["url"] ?? "") \(tracking?["events"] ?? "") \(marketing?["events"] ?? "")"
        }
        #expect(tenants == ["brand-a declared \(hosts.brandA.url) 2 1", "brand-b declared \(hosts.brandB.url) 1 0"], "\(dry.stdout)")
        #expect(await hosts.brandA.emulator.recorder.lastRequests(10).isEmpty, "a dry run sends nothing")

        let replay = try await RelayBinary.run(binary, ["replay", "--config", config, "--from", "1"])
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
        #expect(
            replay.stdout.contains("brand-a: 2 tracking hits and 1 registration, brand-b: 1 tracking hit and 0 registrations)"), "\(replay.stdout)")
        #expect(await Hosts.uris(hosts.defaultHost) == ["/r/?id=h1,d1,2"])
        #expect(await Hosts.uris(hosts.brandA) == ["/nms/mobile/1/registerAndroid.jssp", "/r/?id=h2,d1,2", "/r/?id=h3,d1,2"])
        #expect(await Hosts.uris(hosts.brandB) == ["/r/?id=h4,d2,1"])

        // A file without brand-b: its hit is not sent, and the replay says so (exit 2).
        let partial = try Self.config(hosts, directory: directory, declared: ["brand-a"], name: "brand-a-only.toml")
        let withoutB = try await RelayBinary.run(binary, ["replay", "--config", partial, "--from", "1"])
        #expect(withoutB.status == 2, "\(withoutB.stdout) \(withoutB.stderr)")
        #expect(
            withoutB.stderr.contains(
                "not replayed: 1 event of tenants with no host here for them: brand-b (1 event, not declared); give --config the [tenant.NAME] tables with their hosts"
            ), "\(withoutB.stderr)")
        #expect(await Hosts.uris(hosts.brandB) == ["/r/?id=h4,d2,1"], "brand-b's host got nothing more")
        let dryWithoutB = try await RelayBinary.run(binary, ["replay", "--config", partial, "--from", "1", "--dry-run"])
        #expect(dryWithoutB.status == 2 && dryWithoutB.stdout.contains("tenant brand-b: not declared in --config, not sent: 1 hit, 0 registrations"))
        await hosts.stop()
    }

    @Test("upload --config: each tenant's events go to that tenant's hosts, from cursors of their own")
    func uploadPerTenant() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("tenant-upload")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let hosts = try await Hosts.start()
        let config = try Self.config(hosts, directory: directory)
        try await Self.ingested(binary, config: config)
        let upload = try await RelayBinary.run(binary, ["upload", "--config", config, "--until-drained"])
        #expect(upload.status == 0, "\(upload.stdout) \(upload.stderr)")
        #expect(
            upload.stdout.contains("brand-a: 2 tracking hits and 1 registration, brand-b: 1 tracking hit and 0 registrations)"), "\(upload.stdout)")
        #expect(await Hosts.uris(hosts.defaultHost) == ["/r/?id=h1,d1,2"])
        #expect(await Hosts.uris(hosts.brandA) == ["/nms/mobile/1/registerAndroid.jssp", "/r/?id=h2,d1,2", "/r/?id=h3,d1,2"])
        #expect(await Hosts.uris(hosts.brandB) == ["/r/?id=h4,d2,1"])
        // The cursors are the tenants' own: a second upload has nothing to send.
        let again = try await RelayBinary.run(binary, ["upload", "--config", config, "--until-drained", "--json"])
        let summary = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
        #expect(again.status == 0 && summary?["delivered"] as? Int == 0, "\(again.stdout) \(again.stderr)")
        await hosts.stop()
    }

    @Test("ingest --config beside a running serve hands each line to its tenant's path, in order, and serve forwards them")
    func ingestBesideServe() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("tenant-ingest")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let hosts = try await Hosts.start()
        let config = try Self.config(hosts, directory: directory)
        let server = try ChildProcess(binary, ["serve", "--config", config, "--bind", "127.0.0.1:0"])
        defer { server.stopWithoutWaiting() }
        _ = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let ingest = try await RelayBinary.run(binary, ["ingest", "--config", config, "--acks", "-"], input: Data(Self.events.utf8))
        #expect(ingest.status == 0, "\(ingest.stdout) \(ingest.stderr)")
        #expect(ingest.stderr.contains("handing the events to it"), "the server took them: \(ingest.stderr)")
        // One request per run of one tenant: lines 1, 2 to 4, 5.
        let acks = ingest.stdout.split(separator: "\n").filter { $0.hasPrefix(#"{"ack""#) }
        #expect(
            acks == [
                #"{"ack":{"lines":[1,1],"sequences":[1,1]}}"#, #"{"ack":{"lines":[2,4],"sequences":[2,4]}}"#,
                #"{"ack":{"lines":[5,5],"sequences":[5,5]}}"#,
            ], "\(ingest.stdout)")
        try await eventually("brand-a's three events at brand-a's host") { await hosts.brandA.emulator.recorder.lastRequests(10).count == 3 }
        try await eventually("brand-b's hit at brand-b's host") { await Hosts.uris(hosts.brandB) == ["/r/?id=h4,d2,1"] }
        #expect(await Hosts.uris(hosts.brandA) == ["/nms/mobile/1/registerAndroid.jssp", "/r/?id=h2,d1,2", "/r/?id=h3,d1,2"])
        await server.stop()
        await hosts.stop()
    }
}

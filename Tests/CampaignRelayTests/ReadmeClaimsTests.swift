import CampaignEmulator
import Foundation
import RelayLog
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Claims the README makes about the commands, each run as a user would.
@Suite("README claims, from the command line", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct ReadmeClaimsTests {
    static func directory(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)").path
    }

    static func hits(_ range: ClosedRange<Int>, delivery: String = "readme") -> Data {
        Data(range.map { #"{"kind":"track","action":"impression","messageId":"\#($0)","deliveryId":"\#(delivery)"}"# + "\n" }.joined().utf8)
    }

    @Test("wal verify exits 0 on a clean log and 1 when a frame is damaged")
    func walVerifyDamage() async throws {
        let binary = try RelayBinary.path()
        let data = Self.directory("verify")
        #expect(try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data], input: Self.hits(1...200)).status == 0)
        let clean = try await RelayBinary.run(binary, ["wal", "verify", "--data-dir", data])
        #expect(clean.status == 0)
        let identity = try #require(RelayIdentity.read(dataDirectory: data))
        #expect(clean.stdout.hasPrefix("relay id:          \(identity.relayID)\nepoch:             1 (since sequence 1)\n"), "\(clean.stdout)")
        let wal = "\(data)/wal"
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: wal).filter { $0.hasSuffix(".wal") }.sorted().first)
        let handle = try #require(FileHandle(forUpdatingAtPath: "\(wal)/\(segment)"))
        try handle.seek(toOffset: 100)  // inside the first frame
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: 100)
        try handle.write(contentsOf: [byte ^ 0x01])
        try handle.close()
        let damaged = try await RelayBinary.run(binary, ["wal", "verify", "--data-dir", data, "--json"])
        #expect(damaged.status == 1, "\(damaged.stdout)")
        #expect(damaged.stdout.contains(#""clean":false"#), "\(damaged.stdout)")
        #expect(damaged.stdout.contains(#""epoch":1"#) && damaged.stdout.contains(#""relayId":"\#(identity.relayID)""#), "\(damaged.stdout)")
    }

    @Test("ingest exits 1 when the log refuses (--max-wal-bytes) and keeps what it stored")
    func ingestLogFull() async throws {
        let binary = try RelayBinary.path()
        let data = Self.directory("full")
        let run = try await RelayBinary.run(
            binary, ["ingest", "-", "--data-dir", data, "--max-wal-bytes", "8192", "--segment-bytes", "4096", "--batch-bytes", "1024", "--json"],
            input: Self.hits(1...5000)
        )
        #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
        #expect((summary["error"] as? String)?.hasPrefix("log full") == true, "\(summary)")
        let accepted = try #require(summary["accepted"] as? Int)
        #expect(accepted > 0 && accepted < 5000)
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", data])
        #expect(dump.stdout.split(separator: "\n").count == accepted, "exactly the acknowledged events are stored")
    }

    @Test("ingest --integration-key refuses lines of other keys, as serve does, and stores the rest")
    func ingestIntegrationKeys() async throws {
        let binary = try RelayBinary.path()
        let data = Self.directory("keys")
        let input = """
            {"kind":"register","platform":"ios","integrationKey":"good","registrationToken":"t1"}
            {"kind":"register","platform":"ios","integrationKey":"bad","registrationToken":"t2"}
            {"kind":"track","action":"open","messageId":"7","deliveryId":"d","integrationKey":"bad"}
            {"kind":"track","action":"open","messageId":"8","deliveryId":"d"}

            """
        let run = try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data, "--integration-key", "good"], input: Data(input.utf8))
        #expect(run.status == 2, "some lines refused: exit 2; \(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains(#"line 2: integration key "bad" is not known to this relay (UnknownUUID)"#), "\(run.stderr)")
        #expect(run.stderr.contains(#"line 3: integration key "bad" is not known to this relay (UnknownUUID)"#), "\(run.stderr)")
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", data])
        let stored = dump.stdout.split(separator: "\n")
        #expect(stored.count == 2, "\(dump.stdout)")
        #expect(stored.first?.contains(#""registrationToken":"t1""#) == true && stored.last?.contains(#""messageId":"8""#) == true, "\(dump.stdout)")
    }

    @Test("--no-preallocate: segments hold only their frames")
    func noPreallocate() async throws {
        let binary = try RelayBinary.path()
        for (flag, preallocated) in [("--no-preallocate", false), ("--preallocate", true)] {
            let data = Self.directory("prealloc")
            #expect(try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data, flag], input: Self.hits(1...50)).status == 0)
            let verify = try await RelayBinary.run(binary, ["wal", "verify", "--data-dir", data, "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any], "\(verify.stdout)")
            let bytes = object["preallocatedBytes"] as? Int ?? -1
            #expect(preallocated ? bytes > 0 : bytes == 0, "\(flag): preallocatedBytes \(bytes)")
        }
    }

    @Test("the CAMPAIGN_RELAY_*_HOST variables stand for --tracking-host and --marketing-host")
    func hostVariables() async throws {
        let binary = try RelayBinary.path()
        let running = try await RunningEmulator.start()
        let data = Self.directory("env-hosts")
        let events =
            Self.hits(1...3) + Data(#"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t"}"#.utf8) + Data("\n".utf8)
        #expect(try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data], input: events).status == 0)
        let upload = try await RelayBinary.run(
            "/usr/bin/env",
            [
                "CAMPAIGN_RELAY_TRACKING_HOST=\(running.url)", "CAMPAIGN_RELAY_MARKETING_HOST=\(running.url)", binary, "upload", "--until-drained",
                "--data-dir", data, "--json",
            ]
        )
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(await running.emulator.recorder.acceptedHits == 3)
        #expect(await running.emulator.recorder.acceptedRegistrations.count == 1)
        await running.stop()
    }

    @Test("SIGINT stops serve cleanly: exit 0 and a clean log")
    func sigint() async throws {
        let binary = try RelayBinary.path()
        let data = Self.directory("sigint")
        let server = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", data])
        let port = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let http = TestHTTPClient()
        #expect(try await http.get("http://127.0.0.1:\(port)/r/?id=h05,sigint,1").status == 200)
        await http.shutdown()
        kill(server.process.processIdentifier, SIGINT)
        #expect(await server.exit(within: 30))
        #expect(server.process.terminationStatus == 0)
        let verify = try await RelayBinary.run(binary, ["wal", "verify", "--data-dir", data, "--json"])
        #expect(verify.status == 0 && verify.stdout.contains(#""clean":true"#), "\(verify.stdout)")
    }

    @Test("deadletter retry --id N re-queues exactly that letter")
    func retryById() async throws {
        let binary = try RelayBinary.path()
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["known"]
        let running = try await RunningEmulator.start(faults: faults)
        let data = Self.directory("retry-id")
        let lines = ["a", "b", "c"].map {
            #"{"kind":"register","platform":"ios","integrationKey":"stranger-\#($0)","registrationToken":"t\#($0)"}"# + "\n"
        }.joined()
        #expect(try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data], input: Data(lines.utf8)).status == 0)
        #expect(try await RelayBinary.run(binary, ["upload", "--until-drained", "--marketing-host", running.url, "--data-dir", data]).status == 0)
        let retry = try await RelayBinary.run(binary, ["deadletter", "retry", "--id", "2", "--data-dir", data])
        #expect(retry.status == 0)
        #expect(retry.stdout == "re-queued 1 dead letter as sequences 4\n", "\(retry.stdout)")
        let list = try await RelayBinary.run(binary, ["deadletter", "list", "--data-dir", data, "--json"])
        let letters =
            try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])["deadLetters"] as? [[String: Any]]
        #expect(letters?.compactMap { $0["id"] as? Int } == [1, 3], "letter 2 is re-queued, 1 and 3 wait")
        await running.stop()
    }

    @Test("stats: the text table, --delivery, --limit, and --rebuild refused on a partial log unless --allow-partial")
    func statsOptions() async throws {
        let binary = try RelayBinary.path()
        let data = Self.directory("stats-options")
        let input = Self.hits(1...3000, delivery: "alpha") + Self.hits(1...100, delivery: "beta") + Self.hits(1...50, delivery: "gamma")
        #expect(
            try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data, "--segment-bytes", "4096", "--batch-bytes", "1024"], input: input)
                .status == 0)
        let table = try await RelayBinary.run(binary, ["stats", "--data-dir", data])
        #expect(table.status == 0)
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "aggregated log sequences 1 to 3150", "\(table.stdout)")
        #expect(lines.contains { $0.hasPrefix("alpha ") && $0.contains(" 3000 ") }, "\(table.stdout)")
        let one = try await RelayBinary.run(binary, ["stats", "--delivery", "beta", "--data-dir", data, "--json"])
        let deliveries =
            try #require(try JSONSerialization.jsonObject(with: Data(one.stdout.utf8)) as? [String: Any])["deliveries"] as? [[String: Any]]
        #expect(deliveries?.map { $0["deliveryId"] as? String } == ["beta"])
        #expect(deliveries?.first?["impressions"] as? Int == 100)
        let limited = try await RelayBinary.run(binary, ["stats", "--limit", "2", "--data-dir", data, "--json"])
        #expect(
            ((try JSONSerialization.jsonObject(with: Data(limited.stdout.utf8)) as? [String: Any])?["deliveries"] as? [[String: Any]])?.count == 2)
        let missing = try await RelayBinary.run(binary, ["stats", "--delivery", "nope", "--data-dir", data])
        #expect(missing.status == 1)

        // stats counted without letting segments go: the first upload still gets every event.
        let running = try await RunningEmulator.start()
        #expect(try await RelayBinary.run(binary, ["upload", "--until-drained", "--tracking-host", running.url, "--data-dir", data]).status == 0)
        #expect(await running.emulator.recorder.distinctHits == 3150, "stats must not delete segments an upload has not read")
        await running.stop()
        // Every consumer passes the first segments (the uploader, and `aggregate` moving its
        // cursor): with --retain 0 they are deleted, and the log no longer starts at 1.
        #expect(try await RelayBinary.run(binary, ["aggregate", "--retain", "0", "--data-dir", data]).status == 0)
        #expect(try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data], input: Self.hits(3001...3010, delivery: "alpha")).status == 0)
        let refused = try await RelayBinary.run(binary, ["stats", "--rebuild", "--data-dir", data])
        #expect(refused.status == 1, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stderr.contains("--rebuild --allow-partial"), "\(refused.stderr)")
        let partial = try await RelayBinary.run(binary, ["stats", "--rebuild", "--allow-partial", "--data-dir", data, "--json"])
        #expect(partial.status == 0, "\(partial.stderr)")
        let first =
            ((try JSONSerialization.jsonObject(with: Data(partial.stdout.utf8)) as? [String: Any])?["sequences"] as? [String: Any])?["first"] as? Int
            ?? 0
        #expect(first > 1, "the rebuilt counts start where the log now starts: \(partial.stdout)")
    }

    @Test("emulator faults from the command line and POST /emulator/faults: 429 rate limit retried to the end, latency")
    func emulatorFaults() async throws {
        let binary = try RelayBinary.path()
        let emulator = try ChildProcess(binary, ["emulate", "--bind", "127.0.0.1:0", "--rate-limit", "20", "--retry-after", "1", "--json"])
        defer { emulator.stopWithoutWaiting() }
        let port = try await emulator.await(#""url":"http://127\.0\.0\.1:(\d+)""#)
        let url = "http://127.0.0.1:\(port)"
        let data = Self.directory("emulator-faults")
        #expect(try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data], input: Self.hits(1...60)).status == 0)
        let upload = try await RelayBinary.run(binary, ["upload", "--until-drained", "--tracking-host", url, "--data-dir", data, "--json"])
        #expect(upload.status == 0, "\(upload.stderr)")
        let http = TestHTTPClient()
        let report = try JSONSerialization.jsonObject(with: Data(try await http.get(url + "/emulator/hits").body.utf8)) as? [String: Any]
        #expect(report?["distinct"] as? Int == 60, "every hit arrived despite the 429s")
        let requests = try await http.get(url + "/emulator/requests?limit=1000").body
        #expect(requests.contains(#""status":429"#), "the rate limit answered 429")

        // Faults changed at run time: 150 ms latency on every answer.
        let set = try await http.post(url + "/emulator/faults", #"{"dropRate":0,"failureRate":0,"retryAfterAsDate":false,"latencyMilliseconds":150}"#)
        #expect(set.status == 200, "\(set.body)")
        let started = Date()
        #expect(try await http.get(url + "/r/?id=h1,latency,1").status == 200)
        #expect(Date().timeIntervalSince(started) >= 0.14)
        await http.shutdown()
    }
}

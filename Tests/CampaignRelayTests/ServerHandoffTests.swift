import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// The commands next to a running `serve` on the same data directory: they hand events to it, or
/// say what it already does, instead of failing on its lock.
@Suite("Commands next to a running server", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct ServerHandoffTests {
    static func directory(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)").path
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    @Test("ingest FILE, aggregate, upload and stats while serve holds the data directory")
    func ingestNextToServe() async throws {
        let binary = try RelayBinary.path()
        let data = Self.directory("handoff")
        let server = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", data, "--integration-key", "testIntegrationKey"])
        defer { server.stopWithoutWaiting() }
        let port = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let record = try Self.json(try String(contentsOfFile: "\(data)/server.json", encoding: .utf8))
        #expect(record["url"] as? String == "http://127.0.0.1:\(port)")
        #expect(record["pid"] as? Int == Int(server.process.processIdentifier))

        // One line refused by the server's --integration-key, reported with its line number.
        let lines = [
            #"{"kind":"track","action":"impression","messageId":"1","deliveryId":"handoff"}"#,
            #"{"kind":"register","platform":"ios","integrationKey":"stranger","registrationToken":"t"}"#,
            #"{"kind":"track","action":"open","messageId":"2","deliveryId":"handoff"}"#,
            #"{"kind":"track","action":"open","messageId":"a8a","deliveryId":"handoff"}"#,
        ]
        let file = "\(data)-events.jsonl"
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let ingest = try await RelayBinary.run(binary, ["ingest", file, "--data-dir", data, "--json"])
        #expect(ingest.status == 2, "a line was rejected: \(ingest.stderr)")
        let summary = try Self.json(ingest.stdout)
        #expect(summary["accepted"] as? Int == 2)
        #expect(summary["rejected"] as? Int == 2)
        #expect(summary["firstSequence"] as? Int == 1)
        #expect(summary["lastSequence"] as? Int == 2)
        #expect(ingest.stdout.contains(#""line":2"#) && ingest.stdout.contains("UnknownUUID"), "\(ingest.stdout)")
        #expect(ingest.stderr.contains("handing the events to it"))

        let aggregate = try await RelayBinary.run(binary, ["aggregate", "--data-dir", data])
        #expect(aggregate.status == 0)
        #expect(aggregate.stdout.contains("is already aggregating this log; nothing to do"), "\(aggregate.stdout)")
        let upload = try await RelayBinary.run(binary, ["upload", "--tracking-host", "http://127.0.0.1:9", "--data-dir", data])
        #expect(upload.status == 1)
        #expect(upload.stderr.contains("forwards nothing: it forwards when it has hosts"), "\(upload.stderr)")

        // The server counts them; stats says how far it has got.
        var counts: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            counts = try Self.json(try await RelayBinary.run(binary, ["stats", "--data-dir", data, "--json"]).stdout)
            if ((counts["server"] as? [String: Any])?["lastDurableSequence"] as? Int) == 2,
                ((counts["sequences"] as? [String: Any])?["next"] as? Int) == 3
            {
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let delivery = try #require((counts["deliveries"] as? [[String: Any]])?.first { $0["deliveryId"] as? String == "handoff" }, "\(counts)")
        #expect(delivery["impressions"] as? Int == 1)
        #expect(delivery["opens"] as? Int == 1)
        let text = try await RelayBinary.run(binary, ["stats", "--data-dir", data])
        #expect(
            text.stdout.hasPrefix("aggregated through sequence 2 of 2 stored; the server (pid \(server.process.processIdentifier))"), "\(text.stdout)"
        )
    }

    @Test("deadletter retry hands the re-queued event to the running server, which forwards and counts it once")
    func deadLetterRetryNextToServe() async throws {
        let binary = try RelayBinary.path()
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["known"]
        let emulator = try await RunningEmulator.start(faults: faults)
        let data = Self.directory("handoff-dead")
        let server = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", data, "--marketing-host", emulator.url])
        defer { server.stopWithoutWaiting() }
        let port = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let http = TestHTTPClient()
        let batch = #"[{"kind":"register","platform":"ios","integrationKey":"later","registrationToken":"aa01"}]"#
        #expect(try await http.post("http://127.0.0.1:\(port)/v1/events", batch).status == 200)
        var letters: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(20)
        while letters.isEmpty, Date() < deadline {
            letters =
                try Self.json(try await RelayBinary.run(binary, ["deadletter", "list", "--data-dir", data, "--json"]).stdout)["deadLetters"]
                as? [[String: Any]] ?? []
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(letters.count == 1)

        emulator.emulator.currentFaults = EmulatorFaults()
        let retry = try await RelayBinary.run(binary, ["deadletter", "retry", "--all", "--data-dir", data, "--json"])
        #expect(retry.status == 0, "\(retry.stderr)")
        #expect(retry.stdout == #"{"requeued":[{"id":1,"sequence":2}]}"# + "\n", "\(retry.stdout)")
        var delivered = 0
        while delivered == 0, Date() < deadline.addingTimeInterval(20) {
            delivered = await emulator.emulator.recorder.acceptedRegistrations.count
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(delivered == 1)
        var registrations = -1
        while registrations != 1, Date() < deadline.addingTimeInterval(20) {
            let counts = try Self.json(try await RelayBinary.run(binary, ["stats", "--data-dir", data, "--json"]).stdout)
            if ((counts["sequences"] as? [String: Any])?["next"] as? Int) == 3 {
                registrations = (counts["registrations"] as? [[String: Any]])?.reduce(0) { $0 + ($1["registrations"] as? Int ?? 0) } ?? -1
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(registrations == 1, "the re-queued copy is counted as the original, once")
        await http.shutdown()
        await emulator.stop()
    }

    @Test("ingest then stats, with no aggregate in between: the right counts")
    func statsCatchesUp() async throws {
        let binary = try RelayBinary.path()
        let data = Self.directory("stats-catch-up")
        let first = [
            #"{"kind":"track","action":"impression","messageId":"1","deliveryId":"s"}"#,
            #"{"kind":"track","action":"click","messageId":"1","deliveryId":"s"}"#,
        ]
        #expect(
            try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data], input: Data((first.joined(separator: "\n") + "\n").utf8)).status
                == 0)
        let before = try await RelayBinary.run(binary, ["stats", "--data-dir", data, "--json"])
        #expect(before.status == 0, "no aggregates database yet is not damage: \(before.stderr)")
        #expect(!before.stderr.contains("damaged"))
        let delivery = { (text: String) throws -> [String: Any]? in (try Self.json(text)["deliveries"] as? [[String: Any]])?.first }
        #expect(try delivery(before.stdout)?["impressions"] as? Int == 1)
        #expect(try delivery(before.stdout)?["clicks"] as? Int == 1)
        // More events: stats brings the existing database up to date, not stale.
        #expect(try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data], input: Data((first[0] + "\n").utf8)).status == 0)
        let after = try await RelayBinary.run(binary, ["stats", "--data-dir", data, "--json"])
        #expect(try delivery(after.stdout)?["impressions"] as? Int == 2)
        #expect(try delivery(after.stdout)?["uniqueImpressions"] as? Int == 1)
    }

    @Test("stats --json and GET /v1/deliveries answer with the same object, byte for byte")
    func oneEnvelope() async throws {
        let binary = try RelayBinary.path()
        let data = Self.directory("envelope")
        let lines = [
            #"{"kind":"track","action":"impression","messageId":"1","deliveryId":"env","time":"2026-11-21T10:00:00Z"}"#,
            #"{"kind":"track","action":"click","messageId":"1","deliveryId":"env","time":"2026-11-21T10:00:01.5+01:00"}"#,
            #"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","time":"2026-11-21T10:00:02Z"}"#,
        ]
        let ingest = try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", data], input: Data((lines.joined(separator: "\n") + "\n").utf8))
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let server = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", data])
        let port = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let http = TestHTTPClient()
        var answer = ""
        try await waitUntil("the server to count the three events", seconds: 30) {
            answer = (try? await http.get("http://127.0.0.1:\(port)/v1/deliveries"))?.body ?? ""
            return answer.hasPrefix(#"{"aggregatedThrough":3,"#)
        }
        let one = try await http.get("http://127.0.0.1:\(port)/v1/deliveries/env")
        await http.shutdown()
        await server.stop()
        let stats = try await RelayBinary.run(binary, ["stats", "--no-catch-up", "--data-dir", data, "--json"])
        #expect(stats.stdout == answer + "\n", "stats --json: \(stats.stdout)\nGET /v1/deliveries: \(answer)")
        #expect(
            one.body
                == #"{"clicks":1,"deliveryId":"env","firstEvent":"2026-11-21T09:00:01.500Z","impressions":1,"lastEvent":"2026-11-21T10:00:00.000Z","opens":0,"tenant":"default","uniqueClicks":1,"uniqueImpressions":1,"uniqueOpens":0}"#,
            "\(one.body)")
        #expect(answer.hasSuffix(#""sequences":{"first":1,"next":4}}"#), "\(answer)")
    }
}

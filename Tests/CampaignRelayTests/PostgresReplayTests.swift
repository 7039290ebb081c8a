import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// `replay --log-postgres-url`: a relay's stream of the log kept in PostgreSQL is replayed as its
/// files would be, byte for byte, and its dry run and recount agree with the files'.
@Suite("Replay of a log kept in PostgreSQL", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct PostgresReplayTests {
    /// Hits of three deliveries and registrations of two apps, every one with its own time.
    static let lines: [String] = (1...60).map { index in
        if index % 4 == 0 {
            return
                #"{"kind":"register","platform":"\#(index % 8 == 0 ? "ios" : "android")","integrationKey":"app","registrationToken":"token\#(index)","userKey":"user\#(index)","additionalParams":{"k":"v\#(index)"}}"#
        }
        let action = ["open", "click", "impression"][index % 3]
        return
            #"{"kind":"track","action":"\#(action)","messageId":"\#(index)","deliveryId":"d\#(index % 3)","time":"2026-11-21T10:\#(index < 10 ? "0" : "")\#(index):00Z"}"#
    }

    /// Each request Campaign received: method, target, header fields and body, sorted (the lanes
    /// send concurrently, so their order is not the log's).
    static func received(_ emulator: RunningEmulator) async -> [String] {
        await emulator.emulator.recorder.lastRequests(10_000).map { request in
            "\(request.method) \(request.uri)\n\(request.headers.map { $0.joined(separator: ": ") }.joined(separator: "\n"))\n\n\(request.body)"
        }.sorted()
    }

    /// `stats --json`'s object with the registrations' first and last times left out.
    static func withoutRegistrationTimes(_ json: String) throws -> String {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let registrations = try #require(object["registrations"] as? [[String: Any]])
        object["registrations"] = registrations.map { $0.filter { $0.key != "firstEvent" && $0.key != "lastEvent" } }
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test(
        "a stream served on PostgreSQL with a key file replays byte for byte as the same events from files; the dry run, --to-aggregates and wal dump print the same; wal rekey seals its rows with a new key and wal verify checks them; an unknown stream is named with those held"
    )
    func replayFromPostgres() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start()
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["app"]
        let campaign = try await RunningEmulator.start(faults: faults)
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("pg-replay-\(UUID().uuidString)").path
        let (served, files, replayed) = (base + "-served", base + "-files", base + "-replayed")
        let keys = base + "-keys"
        defer {
            for path in [served, files, replayed, keys, base + "-pg.sqlite", base + "-files.sqlite"] {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        let key = Data(TestKeys.bytes("k1")).base64EncodedString()
        #expect(FileManager.default.createFile(atPath: keys, contents: Data("k1:\(key)\n".utf8), attributes: [.posixPermissions: 0o600]))

        // The stream: served on PostgreSQL, forwarding nowhere, then stopped.
        let server = try ChildProcess(
            binary,
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", served, "--log-format", "json", "--log-postgres-url", postgres.url,
                "--relay-name", "edge-a", "--encryption-key-file", keys,
            ])
        defer { server.stopWithoutWaiting() }
        let url = "http://127.0.0.1:\(try await server.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        let http = TestHTTPClient()
        #expect(try await http.post(url + "/v1/events", "[" + Self.lines.joined(separator: ",") + "]").status == 200)
        await http.shutdown()
        await server.stop()
        // The frames are in the table, sealed: no token in the clear.
        #expect(try await postgres.psql("SELECT sum(event_count) FROM relay_log_frames WHERE stream = 'edge-a'").contains("60"))
        #expect(
            try await postgres.psql("SELECT count(*) FROM relay_log_frames WHERE position('token4' IN encode(frame, 'escape')) > 0").contains("0"))

        // The same events in files.
        let ingest = try await RelayBinary.run(
            binary, ["ingest", "-", "--data-dir", files, "--encryption-key-file", keys], input: Data((Self.lines.joined(separator: "\n") + "\n").utf8)
        )
        try #require(ingest.status == 0, "\(ingest.stderr)")

        let hosts = ["--tracking-host", campaign.url, "--marketing-host", campaign.url, "--encryption-key-file", keys, "--json"]
        let fromPostgres = try await RelayBinary.run(
            binary, ["replay", "--from", "1", "--log-postgres-url", postgres.url, "--relay-name", "edge-a", "--data-dir", replayed] + hosts)
        #expect(fromPostgres.status == 0, "\(fromPostgres.stdout)\(fromPostgres.stderr)")
        let sentFromPostgres = await Self.received(campaign)
        #expect(sentFromPostgres.count == 60)
        await campaign.emulator.recorder.reset()
        let fromFiles = try await RelayBinary.run(binary, ["replay", "--from", "1", "--data-dir", files] + hosts)
        #expect(fromFiles.status == 0, "\(fromFiles.stdout)\(fromFiles.stderr)")
        let sentFromFiles = await Self.received(campaign)
        #expect(sentFromPostgres == sentFromFiles)

        // A part of the stream, as a dry run and as a recount: the same words as from files.
        let part = ["--from", "7", "--to", "41", "--encryption-key-file", keys, "--json"]
        let dryPostgres = try await RelayBinary.run(
            binary, ["replay", "--dry-run", "--log-postgres-url", postgres.url, "--relay-name", "edge-a", "--data-dir", replayed] + part)
        let dryFiles = try await RelayBinary.run(binary, ["replay", "--dry-run", "--data-dir", files] + part)
        #expect(dryPostgres.status == 0 && dryFiles.status == 0, "\(dryPostgres.stderr)\(dryFiles.stderr)")
        #expect(dryPostgres.stdout == dryFiles.stdout)
        #expect(dryPostgres.stdout.contains(#""marketing":{"events":9}"#) && dryPostgres.stdout.contains(#""tracking":{"events":26}"#))
        let countPostgres = try await RelayBinary.run(
            binary,
            ["replay", "--to-aggregates", base + "-pg.sqlite", "--log-postgres-url", postgres.url, "--relay-name", "edge-a", "--data-dir", replayed]
                + part)
        let countFiles = try await RelayBinary.run(binary, ["replay", "--to-aggregates", base + "-files.sqlite", "--data-dir", files] + part)
        #expect(countPostgres.status == 0 && countFiles.status == 0, "\(countPostgres.stderr)\(countFiles.stderr)")
        // Registrations carry the time each was ingested, which differs between the two logs.
        #expect(try Self.withoutRegistrationTimes(countPostgres.stdout) == Self.withoutRegistrationTimes(countFiles.stdout))
        #expect(countPostgres.stdout.contains(#""clicks":9,"deliveryId":"d1""#), "\(countPostgres.stdout)")

        // wal dump prints the stream as it prints the files (registrations aside: each carries
        // the time it was ingested).
        let dumpPostgres = try await RelayBinary.run(
            binary,
            ["wal", "dump", "--log-postgres-url", postgres.url, "--relay-name", "edge-a", "--encryption-key-file", keys, "--data-dir", replayed])
        let dumpFiles = try await RelayBinary.run(binary, ["wal", "dump", "--encryption-key-file", keys, "--data-dir", files])
        #expect(dumpPostgres.status == 0 && dumpFiles.status == 0, "\(dumpPostgres.stderr)\(dumpFiles.stderr)")
        let dumped = dumpPostgres.stdout.split(separator: "\n")
        #expect(dumped.count == 60 && dumped.filter { $0.contains("token") }.count == 15)
        #expect(dumped.filter { !$0.contains("token") } == dumpFiles.stdout.split(separator: "\n").filter { !$0.contains("token") })

        // wal rekey seals every row with the newest key of a new key file: the stream then reads
        // with that key alone, which it could not before; a second run finds nothing to do.
        let onlyNew = base + "-keys-new"
        let both = base + "-keys-both"
        defer { for path in [onlyNew, both] { try? FileManager.default.removeItem(atPath: path) } }
        let newKey = Data(TestKeys.bytes("k2")).base64EncodedString()
        #expect(FileManager.default.createFile(atPath: onlyNew, contents: Data("k2:\(newKey)\n".utf8), attributes: [.posixPermissions: 0o600]))
        #expect(
            FileManager.default.createFile(
                atPath: both, contents: Data("k1:\(key)\nk2:\(newKey)\n".utf8), attributes: [.posixPermissions: 0o600]))
        let stream = ["--log-postgres-url", postgres.url, "--relay-name", "edge-a", "--data-dir", replayed]
        let refused = try await RelayBinary.run(binary, ["wal", "dump", "--encryption-key-file", onlyNew] + stream)
        #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
        let rows = try await postgres.psql("SELECT count(*) FROM relay_log_frames WHERE stream = 'edge-a'").trimmingCharacters(
            in: .whitespacesAndNewlines)
        let rekeyed = try await RelayBinary.run(binary, ["wal", "rekey", "--encryption-key-file", both, "--json"] + stream)
        #expect(rekeyed.status == 0, "\(rekeyed.stdout)\(rekeyed.stderr)")
        #expect(
            rekeyed.stdout.contains(#""framesResealed":\#(rows)"#) && rekeyed.stdout.contains(#""keyId":"k2""#), "\(rows) rows: \(rekeyed.stdout)")
        let readable = try await RelayBinary.run(binary, ["wal", "dump", "--encryption-key-file", onlyNew] + stream)
        #expect(readable.status == 0 && readable.stdout.split(separator: "\n").count == 60, "\(readable.stderr)")
        let again = try await RelayBinary.run(binary, ["wal", "rekey", "--encryption-key-file", both, "--json"] + stream)
        #expect(again.stdout.contains(#""segmentsRewritten":0"#) && again.stdout.contains(#""segmentsCurrent":\#(rows)"#), "\(again.stdout)")

        // wal verify: every row checked with the key; then one row's payload damaged in place.
        let verified = try await RelayBinary.run(binary, ["wal", "verify", "--encryption-key-file", onlyNew, "--json"] + stream)
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(verified.stdout.utf8)) as? [String: Any])
        #expect(report["frames"] as? Int == Int(rows) && report["encryptedFrames"] as? Int == Int(rows) && report["events"] as? Int == 60)
        #expect((report["framesByKeyId"] as? [String: Int]) == ["k2": Int(rows) ?? -1], "\(verified.stdout)")
        _ = try await postgres.psql(
            "UPDATE relay_log_frames SET frame = overlay(frame placing '\\xff'::bytea from 40) WHERE stream = 'edge-a' AND first_sequence = 1")
        let damaged = try await RelayBinary.run(binary, ["wal", "verify", "--encryption-key-file", onlyNew] + stream)
        #expect(
            damaged.status == 1 && damaged.stdout.contains("corrupt frames:    1") && damaged.stdout.contains("stream edge-a at 1"),
            "\(damaged.stdout)")

        // A stream the database does not hold: exit 1, naming those it holds.
        let unknown = try await RelayBinary.run(
            binary, ["replay", "--from", "1", "--log-postgres-url", postgres.url, "--relay-name", "edge-b", "--data-dir", replayed] + hosts)
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("has no stream 'edge-b' (it holds 'edge-a')"), "\(unknown.stderr)")
        await campaign.stop()
        await postgres.destroy()
    }
}

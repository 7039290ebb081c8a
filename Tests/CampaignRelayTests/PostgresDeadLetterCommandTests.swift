import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// Dead letters of a relay on the log in PostgreSQL live in the log's database: they outlive the
/// relay's disk, and another relay shows and re-queues them (`deadletter … --log-postgres-url`).
@Suite("Dead letters on the log kept in PostgreSQL, from the command line", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct PostgresDeadLetterCommandTests {
    static let token = "dead-letter-admin-token"

    /// Three registrations Campaign refuses (an integration key it does not know), then two it takes.
    static let lines: [String] =
        (1...3).map { #"{"kind":"register","platform":"android","integrationKey":"nope","registrationToken":"pdtokd\#($0)","userKey":"u\#($0)"}"# }
        + (4...5).map { #"{"kind":"register","platform":"android","integrationKey":"app","registrationToken":"pdtokd\#($0)","userKey":"u\#($0)"}"# }

    @Test(
        "letters rejected by Campaign go to relay_dead_letters sealed, shown by GET /v1/deadletters and /v1/status; after kill -9 and the data directory deleted, another relay lists them (--log-postgres-url --relay-name), re-queues them through its serve to Campaign, and wal rekey seals them anew"
    )
    func lettersOutliveTheDisk() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start()
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["app"]
        let campaign = try await RunningEmulator.start(faults: faults)
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("pg-dead-letters-\(UUID().uuidString)").path
        let (lost, other, oldKeys, newKeys) = (base + "-a", base + "-b", base + "-k1", base + "-k2")
        defer { for path in [lost, other, oldKeys, newKeys] { try? FileManager.default.removeItem(atPath: path) } }
        let (k1, k2) = (Data(TestKeys.bytes("dl-k1")).base64EncodedString(), Data(TestKeys.bytes("dl-k2")).base64EncodedString())
        #expect(FileManager.default.createFile(atPath: oldKeys, contents: Data("k1:\(k1)\n".utf8), attributes: [.posixPermissions: 0o600]))
        #expect(FileManager.default.createFile(atPath: newKeys, contents: Data("k1:\(k1)\nk2:\(k2)\n".utf8), attributes: [.posixPermissions: 0o600]))
        func sql(_ query: String) async throws -> String { try await postgres.psql(query).trimmingCharacters(in: .whitespacesAndNewlines) }
        func serve(_ directory: String, _ name: String, keys: String) throws -> ChildProcess {
            try ChildProcess(
                binary,
                [
                    "serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-format", "json", "--log-postgres-url", postgres.url,
                    "--relay-name", name, "--encryption-key-file", keys, "--admin-token", Self.token, "--tracking-host", campaign.url,
                    "--marketing-host", campaign.url,
                ])
        }
        let admin = [("Authorization", "Bearer \(Self.token)")]
        let http = TestHTTPClient()

        let first = try serve(lost, "dl-a", keys: oldKeys)
        defer { first.stopWithoutWaiting() }
        let firstURL = "http://127.0.0.1:\(try await first.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        #expect(try await http.post(firstURL + "/v1/events", "[" + Self.lines.joined(separator: ",") + "]").status == 200)
        try await eventually("three letters in relay_dead_letters") { (try? await sql("SELECT count(*) FROM relay_dead_letters")) == "3" }
        #expect(
            try await sql("SELECT string_agg(stream || ':' || sequence || ':' || status, ',' ORDER BY sequence) FROM relay_dead_letters")
                == "dl-a:1:400,dl-a:2:400,dl-a:3:400")
        #expect(
            try await sql("SELECT count(*) FROM relay_dead_letters WHERE event_json LIKE 'sealed:k1:%' AND event_json NOT LIKE '%pdtokd%'") == "3",
            "sealed")
        let listed = try await http.get(firstURL + "/v1/deadletters", headers: admin)
        #expect(listed.status == 200 && listed.body.components(separatedBy: #""status":400"#).count - 1 == 3, "\(listed.body)")
        let status = try await http.get(firstURL + "/v1/status", headers: admin)
        #expect(status.body.contains(#""deadLetters":3"#), "\(status.body)")
        // Nothing local: the file store holds none, and the commands say where they are.
        let local = try await RelayBinary.run(binary, ["deadletter", "list", "--data-dir", lost])
        #expect(
            local.status == 0 && local.stdout == "no dead letters\n" && local.stderr.contains("give --log-postgres-url"),
            "\(local.stdout)\(local.stderr)")
        let localRetry = try await RelayBinary.run(binary, ["deadletter", "retry", "--all", "--data-dir", lost])
        #expect(localRetry.status == 1 && localRetry.stderr.contains("give --log-postgres-url"), "\(localRetry.stderr)")
        #expect(!FileManager.default.fileExists(atPath: lost + "/wal"), "no file log opened on its data directory")

        // The relay's machine is gone for good.
        kill(first.process.processIdentifier, SIGKILL)
        await first.exit(within: 30)
        try FileManager.default.removeItem(atPath: lost)
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)

        let stored = ["--log-postgres-url", postgres.url, "--relay-name", "dl-a", "--data-dir", other]
        let list = try await RelayBinary.run(binary, ["deadletter", "list", "--json", "--encryption-key-file", oldKeys] + stored)
        #expect(list.status == 0, "\(list.stderr)")
        let letters = try #require(
            (try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])?["deadLetters"] as? [[String: Any]])
        #expect(
            letters.compactMap { $0["sequence"] as? Int }.sorted() == [1, 2, 3] && letters.allSatisfy { $0["status"] as? Int == 400 },
            "\(list.stdout)")
        let unknown = try await RelayBinary.run(
            binary, ["deadletter", "list", "--log-postgres-url", postgres.url, "--relay-name", "dl-z", "--data-dir", other])
        #expect(unknown.status == 1 && unknown.stderr.contains("no stream 'dl-z'") && unknown.stderr.contains("'dl-a'"), "\(unknown.stderr)")
        let noServe = try await RelayBinary.run(binary, ["deadletter", "retry", "--all", "--encryption-key-file", oldKeys] + stored)
        #expect(noServe.status == 1 && noServe.stderr.contains("no serve runs on"), "\(noServe.stderr)")

        // Another relay re-queues them through its serve, and Campaign now takes them.
        campaign.emulator.currentFaults = EmulatorFaults()
        let second = try serve(other, "dl-b", keys: newKeys)
        defer { second.stopWithoutWaiting() }
        _ = try await second.await(#""address":"127\.0\.0\.1:(\d+)""#)
        let retry = try await RelayBinary.run(binary, ["deadletter", "retry", "--all", "--json", "--encryption-key-file", newKeys] + stored)
        #expect(retry.status == 0 && retry.stdout.components(separatedBy: #""sequence":"#).count - 1 == 3, "\(retry.stdout)\(retry.stderr)")
        try await eventually("the three re-queued registrations at Campaign") {
            let tokens = Set(await campaign.emulator.recorder.acceptedRegistrations.compactMap { $0["registrationToken"] })
            return tokens.isSuperset(of: ["pdtokd1", "pdtokd2", "pdtokd3"])
        }
        #expect(try await sql("SELECT count(*) FROM relay_dead_letters WHERE stream = 'dl-a' AND requeued_sequence IS NOT NULL") == "3")
        let pending = try await RelayBinary.run(binary, ["deadletter", "list", "--encryption-key-file", newKeys] + stored)
        #expect(pending.stdout.contains("no dead letters"), "\(pending.stdout)")

        // wal rekey of the stream seals its letters with the newest key too.
        let rekey = try await RelayBinary.run(binary, ["wal", "rekey", "--encryption-key-file", newKeys] + stored)
        #expect(rekey.status == 0 && rekey.stdout.contains("dead letters: 3 sealed with key k2"), "\(rekey.stdout)\(rekey.stderr)")
        #expect(
            try await sql(
                "SELECT count(*) FROM relay_dead_letters WHERE stream = 'dl-a' AND event_json LIKE 'sealed:k2:%' AND url LIKE 'sealed:k2:%' AND response_body LIKE 'sealed:k2:%'"
            ) == "3")
        await http.shutdown()
        await second.stop()
        await campaign.stop()
        await postgres.destroy()
    }
}

import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// Erasure on the log kept in PostgreSQL: the rows holding a person's registrations are
/// rewritten, and nothing of them is left in the table nor ever reaches Campaign.
@Suite("Erasure on the log kept in PostgreSQL", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct PostgresErasureTests {
    static let token = "erasure-admin-token"

    /// A registration of `person`'s device `index`.
    static func registration(_ person: String, _ index: Int) -> String {
        #"{"kind":"register","platform":"android","integrationKey":"app","registrationToken":"pdcanary\#(person)token\#(index)","userKey":"pdcanary\#(person)user","deviceName":"pdcanary\#(person)device\#(index)"}"#
    }

    /// Forty events: Ada's three registrations among Bob's ten and hits.
    static let lines: [String] = (1...40).map { index in
        switch index {
        case 5, 17, 33: return registration("ada", index)
        case let other where other % 4 == 0: return registration("bob", other)
        default:
            return
                #"{"kind":"track","action":"open","messageId":"\#(index)","deliveryId":"d1","time":"2026-11-21T10:\#(index < 10 ? "0" : "")\#(index):00Z"}"#
        }
    }

    @Test(
        "POST /v1/privacy/erasures on serve --log-postgres-url: a dry run changes no row; the erasure rewrites the rows holding her three registrations (erased entries at their sequences), no byte of hers stays in the table, and a later serve forwards everyone's but hers"
    )
    func erasureRewritesTheRows() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start()
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["app"]
        let campaign = try await RunningEmulator.start(faults: faults)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-erasure-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func sql(_ query: String) async throws -> String { try await postgres.psql(query).trimmingCharacters(in: .whitespacesAndNewlines) }
        let holdingAda = "SELECT count(*) FROM relay_log_frames WHERE position('pdcanaryada' IN encode(frame, 'escape')) > 0"
        let admin = [("Authorization", "Bearer \(Self.token)")]
        // Uncompressed frames, so that her values would show in the table's bytes.
        let common = [
            "serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-format", "json", "--log-postgres-url", postgres.url, "--relay-name",
            "edge-a", "--compression-level", "0", "--admin-token", Self.token,
        ]
        let server = try ChildProcess(binary, common)
        defer { server.stopWithoutWaiting() }
        let url = "http://127.0.0.1:\(try await server.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        let http = TestHTTPClient()
        #expect(try await http.post(url + "/v1/events", "[" + Self.lines.joined(separator: ",") + "]").status == 200)
        // The counts are in the same database; an erasure changes them too, once the counter runs.
        try await eventually("the forty events counted into PostgreSQL") {
            (try? await sql("SELECT coalesce(sum(events), 0) FROM relay_positions")) == "40"
        }
        let before = try await sql(holdingAda)
        #expect(Int(before) ?? 0 > 0, "her registrations are in the table before: \(before)")

        let dry = try await http.post(url + "/v1/privacy/erasures", #"{"userKey":"pdcanaryadauser","dryRun":true}"#, headers: admin)
        #expect(dry.status == 200 && dry.body.contains(#""registrations":3"#), "\(dry.status) \(dry.body)")
        #expect(try await sql(holdingAda) == before, "a dry run changes no row")

        let erased = try await http.post(url + "/v1/privacy/erasures", #"{"userKey":"pdcanaryadauser"}"#, headers: admin)
        #expect(erased.status == 200, "\(erased.body)\n\(server.text.suffix(3000))")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(erased.body.utf8)) as? [String: Any])
        #expect(report["registrations"] as? Int == 3)
        let rewrites = report["rewrites"] as? [[String: Any]] ?? []
        #expect(rewrites.count == 1 && rewrites.first?["directory"] as? String == "stream edge-a in PostgreSQL", "\(erased.body)")
        #expect(rewrites.first?["entriesErased"] as? Int == 3, "\(erased.body)")
        #expect(try await sql(holdingAda) == "0", "no byte of hers stays in the table")
        #expect(Int(try await sql("SELECT count(*) FROM relay_log_frames WHERE position('pdcanarybob' IN encode(frame, 'escape')) > 0")) ?? 0 > 0)
        // The plan is gone once done, and the audit log has the erasure.
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: directory + "/erasure-plans")) ?? []).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory + "/wal"), "no wal/ on this log")
        let listed = try await http.get(url + "/v1/privacy/erasures", headers: admin)
        #expect(listed.status == 200 && listed.body.components(separatedBy: #""id":"#).count - 1 == 1, "\(listed.body)")
        await server.stop()

        // erase with no serve running opens no log of its own on this data directory.
        let offline = try await RelayBinary.run(binary, ["erase", "--data-dir", directory, "--user-key", "pdcanarybobuser"])
        #expect(offline.status == 1 && offline.stderr.contains("erases through its running serve"), "\(offline.stdout)\(offline.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/wal"))

        // From outside: her sequences are erased entries, everything else as it was.
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--log-postgres-url", postgres.url, "--relay-name", "edge-a"])
        #expect(dump.status == 0, "\(dump.stderr)")
        let dumped = dump.stdout.split(separator: "\n")
        #expect(dumped.count == 40)
        let erasedSequences = dumped.filter { $0.contains(#""kind":"erased""#) }.compactMap { line in
            line.firstMatch(of: /"seq":(\d+)/).map { Int($0.output.1) ?? 0 }
        }
        #expect(erasedSequences.sorted() == [5, 17, 33], "\(dump.stdout)")
        #expect(!dump.stdout.contains("pdcanaryada") && dumped.filter { $0.contains("pdcanarybob") }.count == 10)

        // The fleet's counts no longer hold her registrations.
        let stats = try await RelayBinary.run(binary, ["stats", "--postgres-url", postgres.url, "--json"])
        #expect(stats.status == 0 && stats.stdout.contains(#""registrations":10"#), "\(stats.stdout)\(stats.stderr)")

        // Forwarding afterwards: Bob's registrations reach Campaign, hers never do.
        let forwarding = try ChildProcess(binary, common + ["--tracking-host", campaign.url, "--marketing-host", campaign.url])
        defer { forwarding.stopWithoutWaiting() }
        _ = try await forwarding.await(#""address":"127\.0\.0\.1:(\d+)""#)
        try await eventually("Bob's ten registrations and the hits at Campaign") {
            let registrations = await campaign.emulator.recorder.acceptedRegistrations.count
            let hits = await campaign.emulator.recorder.hits.values.reduce(0, +)
            return registrations >= 10 && hits >= 27
        }
        let tokens = Set(await campaign.emulator.recorder.acceptedRegistrations.compactMap { $0["registrationToken"] })
        #expect(tokens == Set((1...40).filter { $0 % 4 == 0 }.map { "pdcanarybobtoken\($0)" }))
        #expect(!(await campaign.emulator.recorder.lastRequests(1000).map(\.body).joined().contains("pdcanaryada")))
        await http.shutdown()
        await forwarding.stop()
        await campaign.stop()
        await postgres.destroy()
    }
}

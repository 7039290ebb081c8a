import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// Erasure and adoption on the log kept in PostgreSQL: the plan of an erasure a relay could not
/// finish is kept beside its stream, so the relay that adopts the stream after a kill -9 masks
/// her registrations from its first read, never sends them to Campaign, and finishes the
/// erasure; an erasure sent to the adopter erases the adopted stream too.
@Suite("Erasure of an adopted stream on the log kept in PostgreSQL", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
struct PostgresAdoptedErasureTests {
    typealias Lines = PostgresErasureTests

    @Test(
        "a relay whose row rewrite failed is killed with her plan beside its stream: the adopter forwards Bob's registrations and the hits but never hers, and finishes the rewrite; an erasure sent to the adopter erases the adopted stream"
    )
    func adopterMasksAndFinishes() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start()
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["app"]
        let campaign = try await RunningEmulator.start(faults: faults)
        let directories = (0..<2).map {
            FileManager.default.temporaryDirectory.appendingPathComponent("pg-adopted-erasure-\($0)-\(UUID().uuidString)").path
        }
        defer { for directory in directories { try? FileManager.default.removeItem(atPath: directory) } }
        func sql(_ query: String) async throws -> String { try await postgres.psql(query).trimmingCharacters(in: .whitespacesAndNewlines) }
        func holding(_ person: String) async throws -> Int {
            Int(
                try await sql(
                    "SELECT count(*) FROM relay_log_frames WHERE stream = 'edge-a' AND position('pdcanary\(person)' IN encode(frame, 'escape')) > 0")
            ) ?? -1
        }
        let admin = [("Authorization", "Bearer \(Lines.token)")]
        func serve(_ name: String, _ directory: String, hosts: String?) -> [String] {
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-format", "json", "--log-postgres-url", postgres.url, "--relay-name",
                name, "--lease-seconds", "3", "--compression-level", "0", "--admin-token", Lines.token,
            ] + (hosts.map { ["--tracking-host", $0, "--marketing-host", $0] } ?? [])
        }
        let http = TestHTTPClient()

        // edge-a takes the forty events and forwards nothing (it has no hosts).
        let edgeA = try ChildProcess(binary, serve("edge-a", directories[0], hosts: nil))
        defer { edgeA.stopWithoutWaiting() }
        let urlA = "http://127.0.0.1:\(try await edgeA.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        #expect(try await http.post(urlA + "/v1/events", "[" + Lines.lines.joined(separator: ",") + "]").status == 200)
        #expect(try await holding("ada") > 0)

        // The rewrite of the stream's rows fails (a trigger refuses every UPDATE): the erasure
        // answers 503 with its plan stored beside the stream, and edge-a masks her in its lanes.
        _ = try await sql(
            """
            CREATE FUNCTION test_refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'the test refuses this rewrite'; END $$ LANGUAGE plpgsql;
            CREATE TRIGGER test_refuse BEFORE UPDATE ON relay_log_frames FOR EACH ROW EXECUTE FUNCTION test_refuse();
            """)
        let failed = try await http.post(urlA + "/v1/privacy/erasures", #"{"userKey":"pdcanaryadauser"}"#, headers: admin)
        #expect(failed.status == 503 && failed.body.contains("the test refuses this rewrite"), "\(failed.status) \(failed.body)")
        #expect(try await sql("SELECT count(*) FROM relay_erasure_plans WHERE stream = 'edge-a'") == "1", "the plan is beside the stream")
        #expect(try await holding("ada") > 0, "her rows are as they were")

        // edge-a dies with its erasure unfinished.
        kill(edgeA.process.processIdentifier, SIGKILL)
        await edgeA.exit(within: 30)

        // edge-b adopts edge-a's stream and forwards it to Campaign. The rewrite is still refused,
        // so only the plan's mask, read when the stream opened, keeps her registrations back.
        let edgeB = try ChildProcess(binary, serve("edge-b", directories[1], hosts: campaign.url))
        defer { edgeB.stopWithoutWaiting() }
        let urlB = "http://127.0.0.1:\(try await edgeB.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        do {
            try await eventually("edge-b to forward Bob's ten registrations and the 27 hits of edge-a's stream", seconds: 120) {
                let registrations = await campaign.emulator.recorder.acceptedRegistrations.count
                let hits = await campaign.emulator.recorder.hits.values.reduce(0, +)
                return registrations >= 10 && hits >= 27
            }
        } catch {
            let seen = (await campaign.emulator.recorder.acceptedRegistrations.count, await campaign.emulator.recorder.hits.values.reduce(0, +))
            let cursors = (try? await sql("SELECT stream, consumer, position FROM relay_log_cursors ORDER BY 1, 2")) ?? "no cursors"
            let letters = (try? await sql("SELECT stream, sequence, reason FROM relay_dead_letters")) ?? "no letters"
            let status = cursors + "\n" + letters
            let received = await campaign.emulator.recorder.hits.keys.map { "\($0)" }.sorted()
            Issue.record("Campaign has \(seen.0) registrations and \(seen.1) hits \(received); edge-b's status: \(status)")
            throw error
        }
        let tokens = Set(await campaign.emulator.recorder.acceptedRegistrations.compactMap { $0["registrationToken"] })
        #expect(tokens == Set((1...40).filter { $0 % 4 == 0 }.map { "pdcanarybobtoken\($0)" }), "\(tokens.sorted())")
        #expect(!(await campaign.emulator.recorder.lastRequests(1000).map(\.body).joined().contains("pdcanaryada")), "Campaign never got hers")
        try await eventually("edge-b to log that the rewrite it tried was refused") {
            edgeB.text.contains("an adopted stream's unfinished erasure cannot be finished now")
        }
        #expect(try await holding("ada") > 0, "her rows are still as they were")
        #expect(try await sql("SELECT count(*) FROM relay_erasure_plans") == "1")

        // Rewrites go through again. An erasure sent to edge-b finishes hers first, then erases
        // Bob from edge-a's stream too, which edge-b holds.
        _ = try await sql("DROP TRIGGER test_refuse ON relay_log_frames")
        let bob = try await http.post(urlB + "/v1/privacy/erasures", #"{"userKey":"pdcanarybobuser"}"#, headers: admin)
        #expect(bob.status == 200, "\(bob.body)\n\(edgeB.text.suffix(3000))")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(bob.body.utf8)) as? [String: Any])
        #expect(report["registrations"] as? Int == 0, "edge-b's own stream holds none of his")
        let adopted = report["adoptedStreams"] as? [[String: Any]] ?? []
        #expect(adopted.count == 1 && adopted.first?["registrations"] as? Int == 10, "\(bob.body)")
        let rewrites = adopted.first?["rewrites"] as? [[String: Any]] ?? []
        #expect(
            rewrites.first?["directory"] as? String == "stream edge-a in PostgreSQL" && rewrites.first?["entriesErased"] as? Int == 10, "\(bob.body)")
        #expect((adopted.first?["forwarded"] as? [String: Any])?["toCampaign"] as? Int == 10, "\(bob.body)")
        let hashes = [report, adopted.first ?? [:]].map { ($0["selector"] as? [String: Any])?["hash"] as? String }
        #expect(hashes[0] != nil && hashes[0] == hashes[1], "one keyed hash of him in both reports: \(hashes)")
        #expect(try await holding("bob") == 0, "no byte of his stays in edge-a's rows")
        #expect(try await holding("ada") == 0, "nor of hers")
        #expect(try await sql("SELECT count(*) FROM relay_erasure_plans") == "0")

        await http.shutdown()
        await edgeB.stop()
        await campaign.stop()
        await postgres.destroy()
    }
}

import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An erasure at a relay that counts into the fleet's PostgreSQL (`serve --postgres-url`): its
/// registrations leave the fleet's counts and their token digests the fleet's tables, beside the
/// running server and without it, and the fleet aggregator never counts an erased registration.
@Suite("Erasing a person from the fleet's counts", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
struct ErasureFleetTests {
    static let token = "erasure-fleet-admin-token-0123"

    static func registration(_ person: String, _ number: Int, platform: String = "ios") -> String {
        #"{"kind":"register","platform":"\#(platform)","integrationKey":"app","registrationToken":"\#(person)-token-\#(number)","userKey":"\#(person)"}"#
    }

    /// The SHA-256 of `text`, lower-case hex: how the fleet keeps a token.
    static func digest(_ text: String) async throws -> String {
        let run = try await RelayBinary.run("/usr/bin/sha256sum", [], input: Data(text.utf8))
        return String(run.stdout.prefix(64))
    }

    @Test("beside serve and without it: the fleet's registration counts, distinct tokens and token digests lose her, and keep everyone else")
    func fleetForgetsHer() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start()
        let directory = temporaryDirectory("erase-fleet")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func sql(_ query: String) async throws -> String { try await postgres.psql(query).trimmingCharacters(in: .whitespacesAndNewlines) }
        func serve() throws -> ChildProcess {
            try ChildProcess(
                binary,
                [
                    "serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--postgres-url", postgres.url, "--admin-token", Self.token,
                    "--log-format", "json",
                ])
        }
        var relay = try serve()
        var url = "http://127.0.0.1:\(try await relay.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        let http = TestHTTPClient()
        let json = [("Content-Type", "application/json")]
        let events = [Self.registration("ada", 1), Self.registration("ada", 2, platform: "android"), Self.registration("bob", 1)]
        #expect(try await http.post(url + "/v1/events", "[" + events.joined(separator: ",") + "]", headers: json).status == 200)
        try await waitUntil("the fleet to count the three registrations", seconds: 240) {
            (try? await sql("SELECT coalesce(sum(registrations), 0) || '/' || (SELECT count(*) FROM registration_tokens) FROM registration_counts"))
                == "3/3"
        }

        let erased = try await RelayBinary.run(
            binary, ["erase", "--data-dir", directory, "--user-key", "ada", "--admin-token", Self.token, "--json"])
        #expect(erased.status == 0, "\(erased.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(erased.stdout.utf8)) as? [String: Any])
        let fleet = try #require(report["fleet"] as? [String: Any], "\(erased.stdout)")
        #expect(fleet["registrationsUncounted"] as? Int == 2 && fleet["tokensForgotten"] as? Int == 2, "\(fleet)")
        #expect(try await sql("SELECT sum(registrations) || '/' || sum(distinct_tokens) FROM registration_counts") == "1/1")
        #expect(try await sql("SELECT string_agg(registration_token, ',') FROM registration_tokens") == (try await Self.digest("bob-token-1")))
        #expect(try await sql("SELECT count(*) FROM erased_registrations") == "2")

        // Counting goes on.
        #expect(try await http.post(url + "/v1/events", "[" + Self.registration("cara", 1) + "]", headers: json).status == 200)
        try await waitUntil("the fleet to count Cara", seconds: 240) {
            (try? await sql("SELECT sum(registrations) FROM registration_counts")) == "2"
        }
        await relay.stop()

        // Without a server: Dan's registration is erased before the fleet counted it, which then
        // never does.
        let ingested = try await RelayBinary.run(
            binary, ["ingest", "--data-dir", directory, "-"], input: Data((Self.registration("dan", 1) + "\n").utf8))
        #expect(ingested.status == 0, "\(ingested.stderr)")
        let offline = try await RelayBinary.run(
            binary, ["erase", "--data-dir", directory, "--user-key", "dan", "--postgres-url", postgres.url, "--json"])
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(offline.stdout.contains(#""registrationsNeverCounted":1"#), "\(offline.stdout)")
        relay = try serve()
        url = "http://127.0.0.1:\(try await relay.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        try await waitUntil("the fleet to pass Dan's erased registration", seconds: 240) {
            (try? await sql("SELECT next_sequence FROM relay_positions")) == "6"
        }
        #expect(
            try await sql(
                "SELECT sum(registrations) || '/' || sum(distinct_tokens) || '/' || (SELECT count(*) FROM registration_tokens) FROM registration_counts"
            ) == "2/2/2")
        #expect(try await sql("SELECT count(*) FROM erased_registrations") == "3")
        await http.shutdown()
        await relay.stop()
        try await postgres.stop()
    }
}

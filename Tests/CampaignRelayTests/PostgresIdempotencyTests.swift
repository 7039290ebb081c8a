import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// `Idempotency-Key`s of `POST /v1/events` on the log kept in PostgreSQL: kept beside the log,
/// under the relay's stream, so that a relay killed and started again on an empty data directory
/// answers a resent batch as it did the first time and stores its events once.
@Suite("Idempotency-Keys on the log kept in PostgreSQL", .serialized, .timeLimit(.minutes(5)), .tier(.fast))
struct PostgresIdempotencyTests {
    @Test(
        "a batch resent with its key after kill -9 and the data directory deleted gets the first answer, replayed, and its events are stored once; no idempotency.sqlite is made"
    )
    func keysSurviveALostDisk() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-idempotency-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = [
            "serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-format", "json", "--log-postgres-url", postgres.url, "--relay-name",
            "edge-i",
        ]
        let batch = "[" + (1...25).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"idem"}"# }.joined(separator: ",") + "]"
        let other = #"[{"kind":"track","action":"open","messageId":"99","deliveryId":"idem"}]"#
        let keyed = [("Idempotency-Key", "batch-0001"), ("Content-Type", "application/json")]
        let http = TestHTTPClient()

        let first = try ChildProcess(binary, arguments)
        defer { first.stopWithoutWaiting() }
        let url = "http://127.0.0.1:\(try await first.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        let answered = try await http.post(url + "/v1/events", batch, headers: keyed)
        #expect(answered.status == 200, "\(answered.body)")
        #expect(answered.headers["Idempotent-Replayed"].isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory + "/idempotency.sqlite"), "the keys are not in the data directory")
        #expect(
            try await postgres.psql("SELECT key, status FROM relay_idempotency_keys WHERE stream = 'edge-i'").trimmingCharacters(
                in: .whitespacesAndNewlines)
                == "batch-0001|200")

        // The machine's disk is lost: the relay is killed, its data directory deleted.
        kill(first.process.processIdentifier, SIGKILL)
        await first.exit(within: 30)
        try FileManager.default.removeItem(atPath: directory)

        let second = try ChildProcess(binary, arguments)
        defer { second.stopWithoutWaiting() }
        let url2 = "http://127.0.0.1:\(try await second.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        let resent = try await http.post(url2 + "/v1/events", batch, headers: keyed)
        #expect(resent.status == 200 && resent.body == answered.body, "\(resent.body) against \(answered.body)")
        #expect(resent.headers["Idempotent-Replayed"] == ["true"])
        // The same key with another body is refused; without a key, a batch is taken.
        let reused = try await http.post(url2 + "/v1/events", other, headers: keyed)
        #expect(reused.status == 422, "\(reused.status) \(reused.body)")
        #expect(try await http.post(url2 + "/v1/events", other, headers: [("Content-Type", "application/json")]).status == 200)
        await second.stop()

        // From outside: the 25 events once, and the unkeyed one.
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--log-postgres-url", postgres.url, "--relay-name", "edge-i"])
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.stdout.split(separator: "\n").count == 26, "\(dump.stdout)")
        await http.shutdown()
        await postgres.destroy()
    }
}

import Foundation
import RelayProcessTestSupport
import Testing

/// Slow and idle clients cannot hold a relay's connections: `--idle-timeout` closes a connection
/// on which no request part arrives (nothing at all, a head trickling in line by line, a stalled
/// body), while a real client is served throughout. Driven by a Python client this project did
/// not build its server with (Scripts/slow_clients.py).
@Suite("Slow and idle clients", .serialized, .timeLimit(.minutes(10)))
struct SlowClientTests {
    struct Report: Decodable {
        struct Group: Decodable {
            var open: Int
            var closed: Int
            var lastClosedAfter: Double?
        }
        struct Real: Decodable {
            var ok: Int
            var failed: Int
            var maxSeconds: Double
            var medianSeconds: Double
        }
        var idle: Group
        var slow: Group
        var stalledBody: Group
        var real: Real
    }

    func run(idleTimeout: Int, idle: Int, slow: Int, seconds: Int) async throws -> Report {
        let binary = try RelayBinary.path()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("slow-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let relay = try ChildProcess(
            binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--idle-timeout", String(idleTimeout), "--log-level", "notice"])
        defer { relay.stop() }
        let port = try await relay.await(#"address=127\.0\.0\.1:(\d+)"#)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/slow_clients.py").path
        let outcome = try await RelayBinary.run(
            "/usr/bin/env", ["python3", script, port, String(idle), String(slow), String(seconds)], seconds: Double(seconds + 60))
        try #require(outcome.status == 0, "slow_clients.py: \(outcome.stderr)")
        return try JSONDecoder().decode(Report.self, from: Data(outcome.stdout.utf8))
    }

    @Test("600 idle, 200 slowloris and a stalled body are closed after --idle-timeout 3; a real client is served throughout")
    func closedAfterTimeout() async throws {
        let report = try await run(idleTimeout: 3, idle: 600, slow: 200, seconds: 8)
        #expect(report.idle.closed == 600, "\(report.idle)")
        #expect(report.slow.closed == 200, "\(report.slow)")
        #expect(report.stalledBody.closed == 1)
        // 3 s, plus the time the script takes to notice among 800 sockets.
        #expect((report.idle.lastClosedAfter ?? 99) < 7 && (report.slow.lastClosedAfter ?? 99) < 7, "\(report)")
        #expect((report.slow.lastClosedAfter ?? 0) > 2.5, "not before the timeout: \(report.slow)")
        #expect(report.real.failed == 0 && report.real.ok >= 10, "\(report.real)")
        // Served throughout: had the flood taken the relay's connections or its event loops, the
        // real client would wait for the timeout to free them (3 s) or fail, and every request
        // would be slow, not one. The slowest single request is not held to a tighter bound: in a
        // debug build on a loaded 2-core CI machine, the 800 closes at the timeout took one
        // request to 1.16 s.
        #expect(report.real.maxSeconds < 3, "\(report.real)")
        #expect(report.real.medianSeconds < 0.25, "\(report.real)")
    }

    @Test("control: with the default timeout (60 s) the same clients are all still open after 4 s")
    func openBeforeTimeout() async throws {
        let report = try await run(idleTimeout: 60, idle: 100, slow: 50, seconds: 4)
        #expect(report.idle.closed == 0 && report.slow.closed == 0 && report.stalledBody.closed == 0, "\(report)")
        #expect(report.real.failed == 0)
    }
}

import Foundation
import RelayProcessTestSupport
import TestTiers
import Testing

/// Slow and idle clients cannot hold a relay's connections: `--idle-timeout` closes a connection
/// on which no request part arrives (nothing at all, a head trickling in line by line, a stalled
/// body), while a real client is served throughout. Driven by a Python client this project did
/// not build its server with (Scripts/slow_clients.py).
@Suite("Slow and idle clients", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
struct SlowClientTests {
    struct Report: Decodable {
        struct Group: Decodable {
            var open: Int
            var closed: Int
            var firstClosedAfter: Double?
            var lastClosedAfter: Double?
        }
        struct Real: Decodable {
            var ok: Int
            var failed: Int
            /// Requests sent again on a new connection once, the relay having closed the kept-alive
            /// one for want of a request part within the idle timeout.
            var reconnects: Int
            var maxSeconds: Double
            var medianSeconds: Double
            /// Requests answered before the relay closed its first flood connection.
            var answeredBeforeFirstClose: Int
            var firstCloseAfter: Double?
        }
        var idle: Group
        var slow: Group
        var stalledBody: Group
        var real: Real
    }

    /// Holds the flood `seconds`; with `closeWait`, then watches until the relay has closed all of
    /// it or `closeWait` seconds have passed since the start.
    func run(idleTimeout: Int, idle: Int, slow: Int, seconds: Int, closeWait: Int? = nil) async throws -> Report {
        let binary = try RelayBinary.path()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("slow-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let relay = try ChildProcess(
            binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--idle-timeout", String(idleTimeout), "--log-level", "notice"])
        defer { relay.stopWithoutWaiting() }
        let port = try await relay.await(#"address=127\.0\.0\.1:(\d+)"#)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/slow_clients.py").path
        let outcome = try await RelayBinary.run(
            "/usr/bin/env", ["python3", script, port, String(idle), String(slow), String(seconds)] + (closeWait.map { [String($0)] } ?? []),
            seconds: Double(max(seconds, closeWait ?? 0) + 180))
        try #require(outcome.status == 0, "slow_clients.py: \(outcome.stderr)")
        return try JSONDecoder().decode(Report.self, from: Data(outcome.stdout.utf8))
    }

    @Test("600 idle, 200 slowloris and a stalled body are closed after --idle-timeout 3; a real client is served throughout")
    func closedAfterTimeout() async throws {
        let report = try await run(idleTimeout: 3, idle: 600, slow: 200, seconds: 8, closeWait: 45)
        // All closed while the script watched, 45 s at most: with the default timeout of 60 s the
        // same clients stay open (the control below), so it is --idle-timeout 3 that closed them.
        // Not held to a tighter bound: a loaded 2-core machine delays the closes and their notice
        // by seconds (the last slowloris close was seen at 7.98 s beside a CPU burner).
        #expect(report.idle.closed == 600, "\(report.idle)")
        #expect(report.slow.closed == 200, "\(report.slow)")
        #expect(report.stalledBody.closed == 1, "\(report.stalledBody)")
        // Load only delays a close; none comes before the timeout.
        #expect((report.idle.firstClosedAfter ?? 0) > 2.5 && (report.slow.firstClosedAfter ?? 0) > 2.5, "not before the timeout: \(report)")
        #expect(report.real.failed == 0 && report.real.ok >= 10, "\(report.real)")
        // Served throughout: had the flood taken the relay's connections or its event loops, the
        // real client (connected once the flood is open, making requests while it is held and
        // closed) would wait for the timeout to free them or fail, and every request would be
        // slow, not one: the median says it (19 ms beside a CPU burner and the other suites). The
        // slowest single request is not bounded, nor is the order of its first answer and the
        // first close: on a loaded 2-core machine a debug build takes seconds to accept the 800
        // connections queued before the real client's (its first answer came after 7.4 s, the
        // first close at 3.5 s).
        #expect(report.real.medianSeconds < 0.25, "\(report.real)")
        print("slow clients: \(report)")
    }

    @Test("control: with the default timeout (60 s) the same clients are all still open after 4 s")
    func openBeforeTimeout() async throws {
        let report = try await run(idleTimeout: 60, idle: 100, slow: 50, seconds: 4)
        #expect(report.idle.closed == 0 && report.slow.closed == 0 && report.stalledBody.closed == 0, "\(report)")
        #expect(report.real.failed == 0)
        // Far under the timeout, the relay closes no kept-alive connection: no request went again.
        #expect(report.real.reconnects == 0, "\(report.real)")
    }
}

import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// 10,000 idle connections held to a relay do not starve a real client, and request heads are
/// bounded: Hummingbird's HTTP/1 decoder limits (80 KiB for one header field, for all of them, and
/// for the target; 1,000 fields), which `serve` keeps at their defaults and does not expose. Run
/// in a network namespace of the test's own, so the flood has its own ports and loopback; driven
/// by Scripts/idle_flood.py.
@Suite("10,000 idle connections and head limits", .serialized, .timeLimit(.minutes(15)), .tier(.thorough))
struct IdleConnectionFloodTests {
    static let connections = 10_000

    struct Report: Decodable {
        struct Latency: Decodable {
            var ok: Int
            var failed: Int
            var p50Ms: Double?
            var p99Ms: Double?
            var maxMs: Double?
        }
        struct Head: Decodable {
            var headerBytes: Int
            var status: Int?
            var sentBeforeClose: Int
        }
        var opened: Int
        var openSeconds: Double
        /// Seconds from the last connection opened to the relay's answer of a GET /healthz queued
        /// behind them all: the relay's accept queue drained.
        var acceptedSeconds: Double?
        var openAtEnd: Int
        var before: Latency
        var during: Latency
        var heads: [Head]
        /// Seconds from the flood closing to the relay's answer of a GET /healthz.
        var answeredAfterCloseSeconds: Double?
    }

    @Test(
        "10,000 idle connections held 8 s: all stay open (under --idle-timeout), a real client beside them never fails; heads over 80 KiB are refused"
    )
    func idleFlood() async throws {
        let binary = try RelayBinary.path()
        let link = try await NamespaceLink.make(tag: "i")
        defer { link.removeWithoutWaiting() }
        let directory = temporaryDirectory("idle-flood")
        defer { removeTree(directory) }
        // The relay and the script need a descriptor per connection: their soft limit raised to the
        // hard one (raising the hard one needs CAP_SYS_RESOURCE, which containers often lack).
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try #require(
            limit.rlim_max >= UInt(Self.connections + 1_000),
            "needs a hard limit of open files ≥ \(Self.connections + 1_000) (ulimit -Hn is \(limit.rlim_max))")
        let nofile = "--nofile=\(limit.rlim_max):\(limit.rlim_max)"
        let relay = try ChildProcess(
            NamespaceLink.ip,
            link.inside(
                link.near,
                // An idle timeout longer than the whole test: on a loaded machine the relay may take
                // minutes to take in the flood, and the first connections it took must not expire
                // before the last were counted.
                [
                    "prlimit", nofile, binary, "serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-level", "notice", "--idle-timeout",
                    "900",
                ]))
        defer { relay.stopWithoutWaiting() }
        let port = try await relay.await(#"address=127\.0\.0\.1:(\d+)"#)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/idle_flood.py").path
        let outcome = try await RelayBinary.run(
            NamespaceLink.ip, link.inside(link.near, ["prlimit", nofile, "python3", script, port, String(Self.connections), "8"]),
            // The script waits up to 300 s twice (for the accept queue, after the close): room for both.
            seconds: 700)
        try #require(outcome.status == 0, "idle_flood.py: \(outcome.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(outcome.stdout.utf8))
        #expect(relay.process.isRunning, "the relay died: \(relay.text.suffix(2000))")

        #expect(report.opened == Self.connections, "\(outcome.stderr)")
        #expect(report.acceptedSeconds != nil, "the relay did not answer within 300 s of the last connection opened")
        #expect(report.openAtEnd == Self.connections, "the relay closed idle connections before --idle-timeout: \(report.openAtEnd) open")
        #expect(report.before.failed == 0 && report.during.failed == 0, "\(report.before) \(report.during)")
        #expect(report.during.ok >= 50, "\(report.during)")
        // A relay starved by the idle connections is slow on every request, so the median says it:
        // 8 ms measured under three CPU burners in a debug build, against 500 ms here. The slowest
        // request is the machine's, not the relay's: in a CI run on two cores shared with the other
        // suites' relays, one took 2.04 s (its client gives up at 10 s, which counts as failed).
        #expect((report.during.p50Ms ?? 99_999) < 500, "\(report.during)")

        let heads = Dictionary(uniqueKeysWithValues: report.heads.map { ($0.headerBytes, $0) })
        #expect(heads[60 * 1024]?.status == 200, "a 60 KiB header is within the 80 KiB limit: \(report.heads)")
        #expect(heads[100 * 1024]?.status != 200, "a 100 KiB header is over the limit: \(report.heads)")
        // 128 MiB: the relay refuses at 80 KiB, but a loaded relay may read on for a while before
        // its close lands (twice in CI runs, all of a 16 MiB head went in first, then the 400).
        let huge = try #require(heads[128 << 20])
        #expect(huge.status != 200 && huge.sentBeforeClose < 128 << 20, "a 128 MiB header is cut off before its end: \(huge)")
        // 10,000 connections closing at once are 10,000 child tasks ending on two shared cores in a
        // debug build: in loaded CI runs that took 14.7 s, and once over 20 s (0.3 s in a release
        // build); what it took is printed below.
        #expect(report.answeredAfterCloseSeconds != nil, "the relay did not answer within 300 s of the flood closing")
        #expect(try await link.get(in: link.near, "http://127.0.0.1:\(port)/healthz").contains("ok"))
        print(
            "idle flood: \(report.opened) connections opened in \(report.openSeconds) s, all accepted \(report.acceptedSeconds.map { "\($0) s" } ?? "never") later, \(report.openAtEnd) open after 8 s; real client before: \(report.before), during: \(report.during); heads: \(report.heads.map { "\($0.headerBytes) B → \($0.status.map(String.init) ?? "no answer"), \($0.sentBeforeClose) B taken" }); answered \(report.answeredAfterCloseSeconds.map { "\($0) s" } ?? "never") after the flood closed"
        )
        await relay.stop()
        await link.remove()
    }
}

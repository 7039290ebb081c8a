import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// File-descriptor exhaustion: `serve` under a low `ulimit -n` (through `prlimit`), and far more
/// connections than that from Python (Scripts/hold_connections.py), held, then closed.
///
/// Without a bound, the connections took every descriptor (EMFILE): the aggregator could not write
/// its cursor, and the relay died with SIGILL (libdispatch's thread-pool monitor traps when its
/// `open` of `/proc/self/task/*/stat` fails, as libfiu shows). Now the relay accepts connections only up to a budget below its limit: it must not
/// crash or spin, a client already connected keeps being answered, nothing in it fails for want of
/// a descriptor, and once the flood closes new clients are served and every acknowledged event is
/// in the log.
@Suite("File-descriptor exhaustion", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
struct DescriptorExhaustionTests {
    static let descriptorLimit = 128
    static let connections = 300

    /// CPU seconds (user + system) the process `pid` has used.
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = text.lastIndex(of: ")")
        else { return -1 }
        // After "pid (comm)": state is field 3, utime 14 and stime 15.
        let fields = text[text.index(after: end)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return -1 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test(
        "serve with ulimit -n 128 and 300 connections held: no crash, no spinning, descriptors to spare, the connected client answered; new clients served once they close"
    )
    func exhaustion() async throws {
        let binary = try RelayBinary.path()
        let prlimit = "/usr/bin/prlimit"
        try #require(FileManager.default.isExecutableFile(atPath: prlimit), "\(prlimit) is missing (util-linux)")
        let directory = temporaryDirectory("fd-exhaustion")
        defer { removeTree(directory) }
        let started = try await FaultyServe.start(
            prlimit,
            ["--nofile=\(Self.descriptorLimit):\(Self.descriptorLimit)", binary, "serve", "--bind", "127.0.0.1:0", "--data-dir", directory])
        let server = started.child
        defer { FaultyServe.killIfRunning(server) }
        let url: @Sendable () -> String = { [port = started.port] in "http://127.0.0.1:\(port)" }
        let limits = try String(contentsOfFile: "/proc/\(server.process.processIdentifier)/limits", encoding: .utf8)
        #expect(limits.contains(#/Max open files +\d+ +128 /#), "the limit must apply to serve: \(limits)")

        // A client connected before the flood keeps its connection (keep-alive).
        let connected = TestHTTPClient()
        let load = IngestLoad(batchSize: 50, deliveryId: "held")
        var next = 1
        #expect(await load.sendBatch(connected, url, next: &next) == 200)

        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/hold_connections.py").path
        // The connections are held until the test has seen what it waits for (SIGUSR1 releases
        // them); the 120 s are only a bound for a test that dies first.
        let flood = try ChildProcess("/usr/bin/env", ["python3", script, String(started.port), String(Self.connections), "120"])
        let holding = try await flood.await(#"("event": "holding".*)"#)
        // The flood saturates the relay: it holds as many connections as its budget allows (a
        // quarter of the limit, at least 64 descriptors, stay for the log, SQLite and the runtime),
        // and the rest wait in the listen backlog; it never reaches the limit itself.
        let budget = Self.descriptorLimit - 64
        var descriptorsInUse = 0
        try await waitUntil("serve to take connections up to its budget", seconds: 60) {
            descriptorsInUse = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.process.processIdentifier)/fd").count) ?? 0
            return descriptorsInUse >= budget
        }
        #expect(descriptorsInUse < Self.descriptorLimit - 8, "serve must keep descriptors for its files: \(descriptorsInUse) in use")
        // Measured while the descriptors are gone: a server spinning on EMFILE burns a core.
        let cpuBefore = Self.cpuSeconds(server.process.processIdentifier)
        let measuredFrom = Date()
        var statuses: [Int] = []
        while Date().timeIntervalSince(measuredFrom) < 2 {
            statuses.append(await load.sendBatch(connected, url, next: &next))
            try await Task.sleep(for: .milliseconds(100))
        }
        let cpuWhileHeld = Self.cpuSeconds(server.process.processIdentifier) - cpuBefore
        let elapsed = Date().timeIntervalSince(measuredFrom)
        #expect(server.process.isRunning, "serve died when its descriptors ran out: \(server.text.suffix(3000))")
        #expect(statuses.allSatisfy { $0 == 200 || $0 == 503 }, "the connected client while the descriptors are gone: \(statuses)")
        #expect(cpuWhileHeld < elapsed * 0.5, "serve used \(cpuWhileHeld) s of CPU in \(elapsed) s while it could not accept: spinning")
        kill(flood.process.processIdentifier, SIGUSR1)
        let closed = try await flood.await(#"("event": "closed".*)"#)
        #expect(await flood.exit(within: 10))

        // The connections are gone: new clients are served again.
        let fresh = TestHTTPClient()
        try await waitUntil("a new client's batch acknowledged once the connections closed", seconds: 15) {
            await load.sendBatch(fresh, url, next: &next) == 200
        }
        var after: [Int] = []
        for _ in 0..<20 { after.append(await load.sendBatch(fresh, url, next: &next)) }
        #expect(after == Array(repeating: 200, count: 20), "a new client after the flood: \(after)")
        await connected.shutdown()
        await fresh.shutdown()
        #expect(server.process.isRunning, "\(server.text.suffix(3000))")
        let ending = await FaultyServe.stop(server, label: "serve after the flood")
        #expect(ending == .exited(0), "\(ending): \(server.text.suffix(2000))")
        let exhausted = server.text.components(separatedBy: "Too many open files").count - 1
        #expect(exhausted == 0, "serve ran out of descriptors: \(server.text.suffix(2000))")

        let score = load.score.withLockedValue { $0 }
        #expect(score.unexpected.isEmpty, "answers other than 200 and 503: \(score.unexpected.prefix(5))")
        let log = try await DumpedLog.read(binary, directory)
        log.check(acknowledged: score.acknowledged, sent: score.sent, label: "serve out of descriptors")
        print(
            "descriptor exhaustion: ulimit -n \(Self.descriptorLimit), \(descriptorsInUse) descriptors in use, \(holding) / \(closed); the connected client's answers while held: \(statuses); serve's CPU while held \(String(format: "%.2f", cpuWhileHeld)) s in \(String(format: "%.1f", elapsed)) s; 'Too many open files' in its log: \(exhausted); after: 21 of 21 acknowledged; \(score.acknowledged.count) events acknowledged, \(log.events.count) in the log"
        )
    }
}

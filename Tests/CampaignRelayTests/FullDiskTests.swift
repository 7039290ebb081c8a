import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real full disk: the data directory on a small tmpfs that a ballast file fills up (ENOSPC from
/// the kernel, not from a wrapper), then empties again.
///
/// `serve` must answer 503 with `Retry-After` while the log cannot grow (never 500, never a crash),
/// take events again once space is back, and keep every acknowledged event; the aggregates in
/// SQLite on the same disk must fail cleanly (a sound database, exact counts) and catch up once
/// space returns — in `serve` without a restart, and in `aggregate`.
@Suite("A real full disk (tmpfs)", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
struct FullDiskTests {
    /// The counts `stats --json` reports (opens per delivery) and the sequence they cover up to.
    static func opens(_ binary: String, _ directory: String, catchUp: Bool) async throws -> (next: Int, opens: [String: Int]) {
        let run = try await BoundedRun.run(binary, ["stats", "--json", "--data-dir", directory] + (catchUp ? [] : ["--no-catch-up"]), seconds: 60)
        try #require(run.ending == .exited(0), "stats: \(run.ending) \(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        var opens: [String: Int] = [:]
        for row in object["deliveries"] as? [[String: Any]] ?? [] { opens[row["deliveryId"] as? String ?? ""] = row["opens"] as? Int ?? -1 }
        return ((object["sequences"] as? [String: Any])?["next"] as? Int ?? -1, opens)
    }

    @Test(
        "serve on a tmpfs filled by a ballast: 503 + Retry-After while full, never another answer or a crash; intake and counting resume once the ballast goes; every 200 in the log once"
    )
    func serveFillsTheDisk() async throws {
        let binary = try RelayBinary.path()
        let disk = try await ScratchTmpfs(megabytes: 8, label: "full-serve")
        do {
            try await serveFillsTheDisk(binary, disk)
        } catch {
            await disk.unmount()
            throw error
        }
        await disk.unmount()
    }

    private func serveFillsTheDisk(_ binary: String, _ disk: ScratchTmpfs) async throws {
        let directory = "\(disk.path)/data"
        try await DumpedLog.keepEverything(directory)
        let started = try await FaultyServe.start(
            binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--segment-bytes", "262144", "--log-level", "info"])
        let server = started.child
        defer { FaultyServe.killIfRunning(server) }
        let url: @Sendable () -> String = { [port = started.port] in "http://127.0.0.1:\(port)" }
        let http = TestHTTPClient()
        let before = IngestLoad(batchSize: 500, deliveryId: "before")
        var next = 1
        for _ in 0..<4 { #expect(await before.sendBatch(http, url, next: &next) == 200) }
        let ballast = try disk.fill("ballast")

        // Full: the clients go on until the relay has refused 20 of their batches. They are bounded
        // by batches, not by time: 4,000 batches of 500 events need 2 MB even at a byte an event
        // (these take 1.6 in the log), over three times what the ballast leaves (0.45 to 0.58 MB in
        // the runs seen), so a relay that never refuses fails here, however slowly a loaded
        // machine runs the clients. With a 60 s wait beside them, one CI run saw no answer at all in
        // that minute (no 503, no failure, no further 200; a request fails after 30 s) while the
        // relay logged its full disk 9 times: its clients had not been given the CPU.
        let load = IngestLoad(batchSize: 500, deliveryId: "full")
        let fillStarted = Date()
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<2 {
                group.addTask { await load.run(client: client, http, url) { $0.unavailable >= 20 || $0.sent.count >= 4_000 * 500 } }
            }
        }
        let secondsToFull = Date().timeIntervalSince(fillStarted)
        let full = load.score.withLockedValue { $0 }
        #expect(full.unavailable >= 20, "the relay refused \(full.unavailable) of \(full.sent.count / 500) batches on a full 8 MiB disk")
        #expect(server.process.isRunning, "serve died on the full disk: \(server.text.suffix(3000))")
        #expect(full.unexpected.isEmpty, "answers other than 200 and 503 on the full disk: \(full.unexpected.prefix(5))")
        #expect(full.transportFailures == 0)
        #expect(full.unavailableWithoutRetryAfter == 0, "503 answers without Retry-After")
        let noSpace = full.unavailableBodies.components(separatedBy: "No space left on device").count - 1
        #expect(noSpace > 0, "the 503 answers must say the disk is full: \(full.unavailableBodies.prefix(500))")
        let readiness = try await http.get(url() + "/healthz")
        #expect(readiness.status == 200, "the process is healthy while its disk is full")

        // Space is back: intake resumes, and the counts catch up without a restart.
        disk.remove("ballast")
        let after = IngestLoad(batchSize: 500, deliveryId: "after")
        next = 50_000_000
        try await waitUntil("a 200 once the ballast is gone", seconds: 30) { await after.sendBatch(http, url, next: &next) == 200 }
        var statuses: [Int] = []
        for _ in 0..<20 { statuses.append(await after.sendBatch(http, url, next: &next)) }
        #expect(statuses == Array(repeating: 200, count: 20), "intake after the space came back: \(statuses)")
        let stored = try await http.nextSequence(url()) - 1
        var counted = (next: 0, opens: [String: Int]())
        try await waitUntil("the aggregates to count every stored event while serve runs", seconds: 30) {
            counted = try await Self.opens(binary, directory, catchUp: true)
            return counted.next == stored + 1
        }
        await http.shutdown()
        let ending = await FaultyServe.stop(server, label: "serve after the full disk")
        #expect(ending == .exited(0), "\(ending): \(server.text.suffix(2000))")

        let log = try await DumpedLog.read(binary, directory)
        let acknowledged = [before, load, after].reduce(into: Set<String>()) { $0.formUnion($1.score.withLockedValue { $0.acknowledged }) }
        let sent = [before, load, after].reduce(into: Set<String>()) { $0.formUnion($1.score.withLockedValue { $0.sent }) }
        log.check(acknowledged: acknowledged, sent: sent, label: "serve on a full disk")
        let logged = log.events.reduce(into: [String: Int]()) { $0[$1.line["deliveryId"] as? String ?? "", default: 0] += 1 }
        #expect(counted.opens == logged, "the counts while serving equal the log")
        #expect(await LibfiuFaultTests.integrity(directory) == "ok")
        let aggregatorFailures = server.text.components(separatedBy: "database or disk is full").count - 1
        print(
            "full disk, serve: ballast \(ballast) bytes; full after \(String(format: "%.1f", secondsToFull)) s of load, \(full.acknowledged.count / 500) batches acknowledged then, \(full.unavailable) answered 503 (\(noSpace) saying no space); the aggregator's full-disk errors logged: \(aggregatorFailures); after: 21 of 21 acknowledged; \(acknowledged.count) events acknowledged, \(log.events.count) in the log, counted exactly"
        )
    }

    @Test(
        "aggregate on a full tmpfs: exit 1 with a clear error, a sound database, counts exact for what it covers; exact for the whole log once space returns"
    )
    func aggregateOnAFullDisk() async throws {
        let binary = try RelayBinary.path()
        let disk = try await ScratchTmpfs(megabytes: 8, label: "full-aggregate")
        do {
            try await aggregateOnAFullDisk(binary, disk)
        } catch {
            await disk.unmount()
            throw error
        }
        await disk.unmount()
    }

    private func aggregateOnAFullDisk(_ binary: String, _ disk: ScratchTmpfs) async throws {
        let directory = "\(disk.path)/data"
        let events = 30_000
        let input = "\(temporaryDirectory("full-aggregate-input"))/events.jsonl"
        defer { removeTree((input as NSString).deletingLastPathComponent) }
        try LibfiuFaultTests.countedLines(events).write(toFile: input, atomically: true, encoding: .utf8)
        let ingest = try await BoundedRun.run(binary, ["ingest", input, "--data-dir", directory, "--json", "--no-preallocate"], seconds: 120)
        try #require(ingest.ending == .exited(0), "\(ingest.ending) \(ingest.stderr)")
        // Full but for 64 KiB: the aggregates start, then run out of space midway.
        try disk.fill("ballast")
        try disk.shrink("ballast", by: 64 << 10)

        let full = try await BoundedRun.run(binary, ["aggregate", "--data-dir", directory, "--batch-size", "1000"], seconds: 60)
        #expect(full.ending == .exited(1), "aggregate on a full disk: \(full.ending) \(full.stdout) \(full.stderr)")
        // Clear: the disk is full; the file is not damaged, so no rebuild is called for.
        #expect(full.stderr.contains("Error:") && full.stderr.contains("database or disk is full"), "a clear error: \(full.stderr)")
        #expect(!full.stderr.contains("--rebuild") && !full.stderr.contains("not a readable"), "a full disk is not a damaged file: \(full.stderr)")
        let integrity = await LibfiuFaultTests.integrity(directory)
        #expect(integrity == "ok" || integrity == "missing", "the aggregates after the full disk: \(integrity)")
        var coveredWhileFull = 1
        if integrity == "ok" {
            let (next, counts) = try await LibfiuFaultTests.counted(binary, directory)
            #expect(counts == LibfiuFaultTests.expectedCounts(next - 1), "counts exact for sequences 1..<\(next)")
            coveredWhileFull = next
        }

        disk.remove("ballast")
        let finish = try await BoundedRun.run(binary, ["aggregate", "--data-dir", directory, "--batch-size", "1000"], seconds: 120)
        #expect(finish.ending == .exited(0), "aggregate once space is back: \(finish.ending) \(finish.stderr)")
        let (next, counts) = try await LibfiuFaultTests.counted(binary, directory)
        #expect(next == events + 1)
        #expect(counts == LibfiuFaultTests.expectedCounts(events))
        #expect(await LibfiuFaultTests.integrity(directory) == "ok")
        print(
            "full disk, aggregate: the run on the full disk ended \(full.ending) saying \(full.stderr.split(separator: "\n").last ?? ""); it had covered sequences 1..<\(coveredWhileFull); after the space came back, all \(events) counted exactly"
        )
    }

    @Test("--json logs to a standard error that is full (/dev/full: ENOSPC on every write): the lines are dropped, the command works")
    func jsonLogOnAFullDisk() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("log-on-full-disk")
        defer { removeTree(directory) }
        let input = "\(directory)-events.jsonl"
        defer { unlink(input) }
        try LibfiuFaultTests.countedLines(100).write(toFile: input, atomically: true, encoding: .utf8)
        // A new data directory logs a notice at once ("this data directory is a new relay").
        let run = try await BoundedRun.run(
            "/bin/sh", ["-c", #"exec "$0" "$@" 2>/dev/full"#, binary, "ingest", input, "--data-dir", directory, "--json"], seconds: 60)
        #expect(run.ending == .exited(0), "ingest --json with standard error on /dev/full: \(run.ending) \(run.stdout)")
        #expect(run.stdout.contains(#""accepted":100"#), "\(run.stdout)")
    }
}

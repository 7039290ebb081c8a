import Foundation
import RelayChain
import RelayCore
import RelayIO
import RelayProcessTestSupport
import RelaySQLite
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The real binary under libfiu's POSIX preload (what `fiu-run -x` runs, see ``Libfiu``), with
/// failures injected at random into the C library calls that write its files (`pwrite`, `write`,
/// short writes, `fdatasync`, `fsync`, `rename`, `unlink`), and `open` failures of its data
/// directory alone (``Libfiu/dataDirectoryOpenPoint``, see ``logFaults``), for `ingest`, `serve`,
/// `aggregate`, `upload` and the central side of a relay chain.
///
/// Every test proves its faults were hit by counting the injected errno (EIO, "Input/output
/// error") in what the binary reported; `ingest`, `serve` and the central relay per kind of call
/// (``Floors``: the relay's own `fdatasync`, `pwrite` and, where it opens files under load, `open`),
/// running until every floor is met, within a bound. Then it checks, without faults, what the contracts say:
/// every acknowledged event in the log exactly once, no crash (no signal; only the documented exit
/// statuses), no hang (every run has a deadline), and intake, counting and forwarding going on once
/// the faults stop.
@Suite("libfiu faults injected into the real binary", .serialized, .timeLimit(.minutes(10)), .tier(.thorough), .seedInFailures)
struct LibfiuFaultTests {
    typealias Fault = Libfiu.Fault

    /// The points a writer of the log reaches, at rates that let a run get somewhere between faults.
    /// An ingest round makes about 80 `pwrite`, `write` and `fdatasync` calls: at 3 % each, about
    /// nine rounds in ten meet a fault (at 1 %, one CI run met faults in only 6 of 16 rounds).
    ///
    /// Not libfiu's `posix/io/oc/open`: libdispatch, under Swift's executors, reads
    /// `/proc/self/task/*/stat` with `open` while it watches its thread pool, and traps (SIGILL in
    /// `_dispatch_workq_monitor_pools`, seen with gdb in `serve`) when that fails. With random `open`
    /// failures, ingest runs also died by SIGILL under load (about 1 in 16, not traced further): no
    /// run could tell the relay's crashes from libdispatch's. `open` fails instead through
    /// ``Libfiu/OpenFaults``, for the data directory alone (``openFaults(_:)``).
    static let logFaults = [
        Fault(point: "posix/io/rw/pwrite", probability: 0.03), Fault(point: "posix/io/rw/pwrite/reduce", probability: 0.2),
        Fault(point: "posix/io/rw/write", probability: 0.03), Fault(point: "posix/io/rw/write/reduce", probability: 0.2),
        Fault(point: "posix/io/sync/fdatasync", probability: 0.03), Fault(point: "posix/io/sync/fsync", probability: 0.1),
        Fault(point: "posix/io/dir/rename", probability: 0.1), Fault(point: "posix/io/dir/unlink", probability: 0.1),
    ]

    /// `open` failures of the data directory's files alone (``Libfiu/dataDirectoryOpenPoint``, never
    /// libdispatch's `/proc` reads), at 3 %: an ingest round opens a few dozen files (the lock, the
    /// identity, a segment per roll of 8 KiB).
    static let dataDirectoryOpenFault = Fault(point: Libfiu.dataDirectoryOpenPoint, probability: 0.03)

    /// What ``Libfiu/arguments(_:controlPrefix:seed:openFaultsUnder:binary:_:)`` needs to fail
    /// the opens under `directory`.
    static func openFaults(under directory: String) async throws -> (directory: String, library: String) {
        (directory, try await Libfiu.openFaultLibrary())
    }

    /// The fewest injected failures of each kind of call a test must see the binary report, and
    /// whether the counts so far meet them.
    struct Floors {
        var minimum: [String: Int]

        func unmet(_ counts: [String: Int]) -> [String] {
            minimum.keys.sorted().filter { counts[$0, default: 0] < minimum[$0, default: 0] }
        }

        func met(_ counts: [String: Int]) -> Bool { unmet(counts).isEmpty }

        var description: String { minimum.sorted { $0.key < $1.key }.map { "\($0.key) ≥ \($0.value)" }.joined(separator: ", ") }
    }

    struct Ack: Decodable {
        struct Body: Decodable {
            var lines: [Int]
            var sequences: [Int]
        }
        var ack: Body
    }

    static func summary(_ counts: [String: Int]) -> String {
        counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }

    // MARK: ingest

    @Test(
        "ingest under random open, write, sync, rename and unlink failures and short writes, until each kind was met: every acknowledged line in the log once, exit 0 or 1, never a crash"
    )
    func ingest() async throws {
        let binary = try RelayBinary.path()
        let fiu = try Libfiu.require()
        let directory = temporaryDirectory("fiu-ingest")
        defer { removeTree(directory) }
        let seed = TestSeed.make(for: "libfiu ingest")
        let openFaults = try await Self.openFaults(under: directory)
        // The relay's own calls, each failed for real: the fdatasync that makes an acknowledgement
        // durable (a no-op in its place leaves this floor at 0), its writes, its opens.
        let floors = Floors(minimum: ["fdatasync": 3, "pwrite": 3, "open": 3])
        // 16 rounds at least, as many more as the floors take, at most 200. A round ends at its
        // first fault (a tenth of a second or so), whose kind is about one in five an fdatasync,
        // one in three an open or a pwrite: 200 rounds with fewer than 3 of one kind at 1 in 10
        // would happen about twice in ten million runs.
        let (minimumRounds, maximumRounds) = (16, 200)
        let linesPerRound = 3_000
        var sent = Set<String>()
        var acknowledged = Set<String>()
        var injected: [String: Int] = [:]
        var endings: [String: Int] = [:]
        var hung = 0
        var droppedReports = 0
        var rounds = 0
        while rounds < minimumRounds || (!floors.met(injected) && rounds < maximumRounds) {
            let round = rounds
            rounds += 1
            let firstId = round * 1_000_000 + 1
            let ids = (firstId..<firstId + linesPerRound).map(String.init)
            sent.formUnion(ids)
            let input = "\(directory)-round.jsonl"
            try ids.map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"d\#(round)"}"# + "\n" }.joined()
                .write(toFile: input, atomically: true, encoding: .utf8)
            let arguments = Libfiu.arguments(
                Self.logFaults + [Self.dataDirectoryOpenFault], seed: seed &+ UInt64(round), openFaultsUnder: openFaults, binary: binary,
                ["ingest", input, "--data-dir", directory, "--acks", "--json", "--batch-bytes", "4096", "--segment-bytes", "8192"])
            // The deadline tells a hang from work: 60 s, since under CI load a first round (all
            // 3,000 hits, a cursor save every 128 events, a fifth of them failing and retried)
            // was still delivering at 20 s twice (2,680 of 3,000 sent, errors logged to the end),
            // and at 60 s once in a fresh-clone run beside a CPU burner: 240 s, a hang guard.
            let run = try await BoundedRun.runRetryingASilentHang(fiu, arguments, seconds: 240, hangs: &hung)
            endings[run.ending.description, default: 0] += 1
            #expect(run.ending == .exited(0) || run.ending == .exited(1), "round \(round): \(run.ending): \(run.stderr.suffix(2000))")
            let hits = Libfiu.injectedFailures(in: run.stderr)
            // Each failure is reported twice, in the log (standard error) and in the summary (standard
            // output). Injected `write` failures can drop both (one CI run of 16 rounds did: three
            // acknowledgements of 40 lost from standard output as well): then the summary, which
            // ingest always writes last, is missing and nothing else was said on standard error,
            // which only dropped writes explain. A failure of another cause says so on one of them.
            let reported = !Libfiu.injectedFailures(in: run.stdout + run.stderr).isEmpty
            // A summary cut short by an injected short write of standard output (seen in CI: it
            // ended at `fsync /t`, before the injected error's words) was not written either.
            let summaryWritten = run.stdout.split(separator: "\n").contains { line in
                line.hasPrefix(#"{"accepted":"#) && (try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil
            }
            let allDropped = !summaryWritten && run.stderr.allSatisfy(\.isWhitespace)
            if run.ending == .exited(1), !reported, allDropped { droppedReports += 1 }
            #expect(
                run.ending != .exited(1) || reported || allDropped,
                "round \(round) failed without an injected fault: \(run.stdout.suffix(1000)) \(run.stderr.suffix(2000))")
            for (operation, count) in hits { injected[operation, default: 0] += count }
            for line in run.stdout.split(separator: "\n") {
                guard let ack = try? JSONDecoder().decode(Ack.self, from: Data(line.utf8)) else { continue }
                for number in ack.ack.lines[0]...ack.ack.lines[1] { acknowledged.insert(ids[number - 1]) }
            }
        }
        // Faults stop: a clean run opens (and so recovers) the log, then it is read.
        let clean = try await BoundedRun.run(binary, ["ingest", "/dev/null", "--data-dir", directory], seconds: 60)
        #expect(clean.ending == .exited(0), "the clean restart: \(clean.ending) \(clean.stderr)")
        let log = try await DumpedLog.read(binary, directory)
        log.check(acknowledged: acknowledged, sent: sent, label: "ingest under libfiu")
        #expect(
            floors.met(injected),
            "in \(rounds) rounds the binary reported too few injected failures of \(floors.unmet(injected)) (floors \(floors.description), counted \(Self.summary(injected)))"
        )
        #expect(endings["exit 1", default: 0] >= rounds / 2, "faults must cut most runs short: \(endings)")
        #expect(acknowledged.count >= linesPerRound, "the runs must acknowledge events between faults")
        print(
            "libfiu ingest: \(rounds) runs (\(endings), \(hung) start-up hangs retried, \(droppedReports) with both reports lost to write faults), injected failures reported: \(Self.summary(injected)) (floors \(floors.description)); \(acknowledged.count) of \(sent.count) lines acknowledged, \(log.events.count) events in the log"
        )
    }

    // MARK: serve

    /// Starts and stops `serve` once without faults, so that the data directory (identity, log,
    /// aggregates) exists: under faults most starts on an empty directory are refused (exit 1), as
    /// they should be, and the test is about what happens while serving.
    static func prepare(_ binary: String, _ serve: [String]) async throws {
        let clean = try await FaultyServe.start(binary, serve)
        #expect(await FaultyServe.stop(clean.child, label: "the clean first start") == .exited(0))
        let directory = try #require(serve.firstIndex(of: "--data-dir").map { serve[$0 + 1] })
        try await DumpedLog.keepEverything(directory)
    }

    @Test(
        "serve under random faults, then faults switched off with fiu-ctrl: only 200 or 503 + Retry-After, every 200 in the log once, intake recovers"
    )
    func serve() async throws {
        let binary = try RelayBinary.path()
        let fiu = try Libfiu.require()
        let directory = temporaryDirectory("fiu-serve")
        defer { removeTree(directory) }
        let control = "\(directory)-fiu"
        let faults = Self.logFaults
        let serve = ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--segment-bytes", "8192", "--log-level", "info"]
        try await Self.prepare(binary, serve)
        let seed = TestSeed.make(for: "libfiu serve")
        let openFaults = try await Self.openFaults(under: directory)
        let started = try await FaultyServe.start(fiu) { attempt in
            Libfiu.arguments(faults, controlPrefix: control, seed: seed &+ UInt64(attempt), openFaultsUnder: openFaults, binary: binary, serve)
        }
        let server = started.child
        defer { FaultyServe.killIfRunning(server) }
        // serve opens dozens of its data directory's files as it starts (a start whose open fails
        // is refused: 40 attempts at 10 % did not make one), and then one at each segment roll:
        // the open point is enabled once it listens. At 10 %, with 8 KiB segments, 6,000 batches
        // roll a hundred times or more.
        let openFault = Fault(point: Libfiu.dataDirectoryOpenPoint, probability: 0.1)
        try await Libfiu.enable([openFault], pid: server.process.processIdentifier, controlPrefix: control)
        let url: @Sendable () -> String = { [port = started.port] in "http://127.0.0.1:\(port)" }
        let http = TestHTTPClient()
        let load = IngestLoad(batchSize: 20)
        // Each kind of call the relay makes under load, failed and answered 503: its fdatasyncs, its
        // writes, and its opens of new segments (one per 8 KiB roll).
        let floors = Floors(minimum: ["fdatasync": 2, "pwrite": 2, "open": 1])
        // At least 4 s of load, and then until every floor is met in the answers clients got: on a
        // loaded machine 4 s may be only some 60 batches (one CI run), few enough calls that a 3 %
        // fault may miss them all. Bounded by batches, not by a deadline (on a loaded machine the
        // clients may not run for a minute): 6,000 batches (some 2,400 take 4 s here) are 2,000
        // group commits or more, each failed by a pwrite or an fdatasync fault 6 % of the time,
        // and a hundred segment rolls or more, so a relay whose faults never reach a client fails below.
        let loadStart = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<3 {
                group.addTask {
                    await load.run(client: client, http, url) { score in
                        score.sent.count >= 6_000 * 20
                            || (ContinuousClock.now - loadStart >= .seconds(4) && floors.met(Libfiu.injectedFailures(in: score.unavailableBodies)))
                    }
                }
            }
        }
        let loadSeconds = (ContinuousClock.now - loadStart).components.seconds
        #expect(
            server.process.isRunning,
            "serve died under the faults (\(server.process.isRunning ? "" : "\(server.process.terminationReason == .exit ? "exit" : "signal") \(server.process.terminationStatus)")): \(server.text.suffix(3000))"
        )
        let underFaults = load.score.withLockedValue { $0 }

        // Faults stop (the same process): every request is acknowledged again.
        let controlAttempts = try await Libfiu.disable(
            (faults + [openFault]).map(\.point), pid: server.process.processIdentifier, controlPrefix: control)
        let after = IngestLoad(batchSize: 20, deliveryId: "after")
        var next = 900_000_000
        // A batch under way as the faults stopped may still have met one: from the first batch
        // acknowledged after them, every one is.
        try await eventually("a batch acknowledged once the faults stopped") { await after.sendBatch(http, url, next: &next) == 200 }
        var statuses: [Int] = []
        for _ in 0..<30 { statuses.append(await after.sendBatch(http, url, next: &next)) }
        #expect(statuses == Array(repeating: 200, count: 30), "intake once the faults stopped: \(statuses)")
        let metrics = try await http.get(url() + "/metrics").body
        await http.shutdown()
        let ending = await FaultyServe.stop(server, label: "serve after the faults")
        #expect(ending == .exited(0), "serve's stop: \(ending): \(server.text.suffix(2000))")

        let injectedInAnswers = Libfiu.injectedFailures(in: underFaults.unavailableBodies)
        let injectedInLogs = Libfiu.injectedFailures(in: server.text + started.refusedOutput)
        #expect(underFaults.unexpected.isEmpty, "answers other than 200 and 503: \(underFaults.unexpected.prefix(5))")
        #expect(underFaults.unavailableWithoutRetryAfter == 0, "503 answers without Retry-After")
        #expect(underFaults.unavailable > 0, "the faults must reach the clients as 503")
        #expect(
            floors.met(injectedInAnswers),
            "too few injected failures of \(floors.unmet(injectedInAnswers)) reached the clients (floors \(floors.description), counted \(Self.summary(injectedInAnswers)))"
        )
        #expect(RelayChainKillTests.sum("relay_requests_unavailable_total", in: metrics) >= underFaults.unavailable)
        let log = try await DumpedLog.read(binary, directory)
        let acknowledged = underFaults.acknowledged.union(after.score.withLockedValue { $0.acknowledged })
        log.check(acknowledged: acknowledged, sent: underFaults.sent.union(after.score.withLockedValue { $0.sent }), label: "serve under libfiu")
        print(
            "libfiu serve: \(started.refusedStarts) starts refused, \(started.hungStarts) hung, fiu-ctrl took \(controlAttempts) attempts; under faults (\(loadSeconds) s) \(underFaults.acknowledged.count / 20) batches acknowledged, \(underFaults.unavailable) answered 503, \(underFaults.transportFailures) without an answer; injected failures in 503 answers: \(Self.summary(injectedInAnswers)), in the server's log: \(Self.summary(injectedInLogs)); after: 30 of 30 acknowledged; \(acknowledged.count) events acknowledged, \(log.events.count) in the log"
        )
    }

    // MARK: aggregate

    /// Counts per delivery ([impressions, opens, clicks]) of the first `count` events `aggregate`
    /// and `upload` are given: event i is action i % 3 of delivery d(i % 7), message i.
    static func expectedCounts(_ count: Int) -> [String: [Int]] {
        var counts: [String: [Int]] = [:]
        for id in stride(from: 1, through: count, by: 1) { counts["d\(id % 7)", default: [0, 0, 0]][id % 3] += 1 }
        return counts
    }

    static func countedLines(_ count: Int) -> String {
        let actions = ["impression", "open", "click"]
        return (1...count).map { #"{"kind":"track","action":"\#(actions[$0 % 3])","messageId":"\#($0)","deliveryId":"d\#($0 % 7)"}"# + "\n" }
            .joined()
    }

    /// The aggregates as `stats --no-catch-up --json` reports them (no faults), and their position.
    static func counted(_ binary: String, _ directory: String) async throws -> (next: Int, counts: [String: [Int]]) {
        let run = try await BoundedRun.run(binary, ["stats", "--no-catch-up", "--json", "--data-dir", directory], seconds: 60)
        try #require(run.ending == .exited(0), "stats: \(run.ending) \(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        var counts: [String: [Int]] = [:]
        for row in object["deliveries"] as? [[String: Any]] ?? [] {
            let values = ["impressions", "opens", "clicks"].map { row[$0] as? Int ?? -1 }
            if values != [0, 0, 0] { counts[row["deliveryId"] as? String ?? ""] = values }
        }
        return ((object["sequences"] as? [String: Any])?["next"] as? Int ?? -1, counts)
    }

    /// SQLite's `PRAGMA integrity_check` of the aggregates ("ok" for a sound file), or "missing"
    /// when there is none yet: no file, or a file whose creation never committed (no tables, which
    /// the aggregator's next run creates), run on a thread made for blocking calls.
    static func integrity(_ directory: String) async -> String {
        let path = "\(directory)/aggregates.sqlite"
        guard FileManager.default.fileExists(atPath: path) else { return "missing" }
        return await BlockingExecutor(name: "integrity-check").run { () -> String in
            do throws(SQLiteError) {
                // Read-write, as the aggregator's next run opens it: SQLite first recovers a journal
                // a failed writer left, which a read-only connection cannot do.
                let connection = try SQLiteConnection(path: path)
                defer { connection.close() }
                let tables = try connection.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'aggregator_state'")
                _ = try tables.step()
                let created = tables.int64(0) == 1
                tables.finalize()
                guard created else { return "missing" }
                let statement = try connection.prepare("PRAGMA integrity_check")
                var lines: [String] = []
                while try statement.step() { lines.append(statement.text(0) ?? "") }
                statement.finalize()
                return lines.joined(separator: "; ")
            } catch {
                return "\(error)"
            }
        }
    }

    @Test("aggregate under random faults: exit 0 or 1, the database sound and its counts exactly those of the log prefix it covers, after every run")
    func aggregate() async throws {
        let binary = try RelayBinary.path()
        let fiu = try Libfiu.require()
        let directory = temporaryDirectory("fiu-aggregate")
        defer { removeTree(directory) }
        let events = 20_000
        let input = "\(directory)-events.jsonl"
        defer { unlink(input) }
        try Self.countedLines(events).write(toFile: input, atomically: true, encoding: .utf8)
        let ingest = try await BoundedRun.run(binary, ["ingest", input, "--data-dir", directory, "--json"], seconds: 120)
        try #require(ingest.ending == .exited(0), "\(ingest.stderr)")

        let faults = [
            Fault(point: "posix/io/rw/pwrite", probability: 0.01), Fault(point: "posix/io/rw/pwrite/reduce", probability: 0.2),
            Fault(point: "posix/io/rw/write", probability: 0.01), Fault(point: "posix/io/sync/fdatasync", probability: 0.03),
            Fault(point: "posix/io/sync/fsync", probability: 0.05), Fault(point: "posix/io/dir/rename", probability: 0.05),
            Fault(point: "posix/io/dir/unlink", probability: 0.1),
        ]
        var injected: [String: Int] = [:]
        var endings: [String: Int] = [:]
        var positions: [Int] = []
        var hung = 0
        var previous = 1
        let seed = TestSeed.make(for: "libfiu aggregate")
        for round in 0..<8 {
            let arguments = Libfiu.arguments(
                faults, seed: seed &+ UInt64(round), binary: binary,
                ["aggregate", "--data-dir", directory, "--batch-size", "500", "--log-level", "error"])
            // The deadline tells a hang from work: 60 s, since under CI load a first round (all
            // 3,000 hits, a cursor save every 128 events, a fifth of them failing and retried)
            // was still delivering at 20 s twice (2,680 of 3,000 sent, errors logged to the end),
            // and at 60 s once in a fresh-clone run beside a CPU burner: 240 s, a hang guard.
            let run = try await BoundedRun.runRetryingASilentHang(fiu, arguments, seconds: 240, hangs: &hung)
            endings[run.ending.description, default: 0] += 1
            #expect(run.ending == .exited(0) || run.ending == .exited(1), "round \(round): \(run.ending): \(run.stderr.suffix(2000))")
            for (operation, count) in Libfiu.injectedFailures(in: run.stderr) { injected[operation, default: 0] += count }
            let integrity = await Self.integrity(directory)
            #expect(integrity == "ok" || integrity == "missing", "round \(round): the aggregates after the faults: \(integrity)")
            if integrity == "ok" {
                let (next, counts) = try await Self.counted(binary, directory)
                #expect(next >= previous, "round \(round): the position went back from \(previous) to \(next)")
                #expect(counts == Self.expectedCounts(next - 1), "round \(round): the counts are not those of sequences 1..<\(next)")
                previous = next
                positions.append(next)
            }
        }
        let finish = try await BoundedRun.run(binary, ["aggregate", "--data-dir", directory, "--log-level", "error"], seconds: 120)
        #expect(finish.ending == .exited(0), "the clean run: \(finish.ending) \(finish.stderr)")
        let (next, counts) = try await Self.counted(binary, directory)
        #expect(next == events + 1)
        #expect(counts == Self.expectedCounts(events))
        #expect(await Self.integrity(directory) == "ok")
        #expect(injected.values.reduce(0, +) >= 4, "the faults must be hit (counted \(Self.summary(injected)))")
        #expect(endings["exit 1", default: 0] >= 2, "faults must stop some runs: \(endings)")
        print(
            "libfiu aggregate: 8 runs (\(endings), \(hung) start-up hangs retried), injected failures reported: \(Self.summary(injected)); positions after each run \(positions); counts exact after each run and after the clean run (\(events) events)"
        )
    }

    // MARK: upload

    @Test("upload --until-drained under random faults: exit 0 or 1, and after a clean run Campaign has every event of the log, duplicates bounded")
    func upload() async throws {
        let binary = try RelayBinary.path()
        let fiu = try Libfiu.require()
        let directory = temporaryDirectory("fiu-upload")
        defer { removeTree(directory) }
        let events = 3_000
        let maxUnsynced = 256
        let input = "\(directory)-events.jsonl"
        defer { unlink(input) }
        try Self.countedLines(events).write(toFile: input, atomically: true, encoding: .utf8)
        let ingest = try await BoundedRun.run(binary, ["ingest", input, "--data-dir", directory, "--json"], seconds: 120)
        try #require(ingest.ending == .exited(0), "\(ingest.stderr)")
        let campaign = try await RunningEmulator.start()

        let faults = [
            Fault(point: "posix/io/rw/pwrite", probability: 0.01), Fault(point: "posix/io/rw/pwrite/reduce", probability: 0.2),
            Fault(point: "posix/io/rw/write", probability: 0.002), Fault(point: "posix/io/sync/fdatasync", probability: 0.01),
            Fault(point: "posix/io/sync/fsync", probability: 0.05), Fault(point: "posix/io/dir/rename", probability: 0.05),
            Fault(point: "posix/io/dir/unlink", probability: 0.1),
        ]
        let upload = [
            "upload", "--until-drained", "--data-dir", directory, "--tracking-host", campaign.url, "--marketing-host", campaign.url,
            "--max-unsynced", String(maxUnsynced), "--backoff-cap", "0.2", "--log-level", "error",
        ]
        var injected: [String: Int] = [:]
        var endings: [String: Int] = [:]
        var hung = 0
        let rounds = 6
        var delivered: [Int] = []
        let seed = TestSeed.make(for: "libfiu upload")
        for round in 0..<rounds {
            let arguments = Libfiu.arguments(faults, seed: seed &+ UInt64(round), binary: binary, upload)
            // The deadline tells a hang from work: 60 s, since under CI load a first round (all
            // 3,000 hits, a cursor save every 128 events, a fifth of them failing and retried)
            // was still delivering at 20 s twice (2,680 of 3,000 sent, errors logged to the end),
            // and at 60 s once in a fresh-clone run beside a CPU burner: 240 s, a hang guard.
            let run = try await BoundedRun.runRetryingASilentHang(fiu, arguments, seconds: 240, hangs: &hung)
            endings[run.ending.description, default: 0] += 1
            #expect(run.ending == .exited(0) || run.ending == .exited(1), "round \(round): \(run.ending): \(run.stderr.suffix(2000))")
            for (operation, count) in Libfiu.injectedFailures(in: run.stderr) { injected[operation, default: 0] += count }
            delivered.append(await campaign.emulator.recorder.distinctHits)
        }
        let finish = try await BoundedRun.run(binary, upload, seconds: 120)
        #expect(finish.ending == .exited(0), "the clean run: \(finish.ending) \(finish.stderr)")
        let recorder = campaign.emulator.recorder
        let distinct = await recorder.distinctHits
        let accepted = await recorder.acceptedHits
        #expect(distinct == events, "Campaign must have every event")
        #expect(Set(await recorder.hits.keys.map(\.messageId)) == Set((1...events).map { String($0, radix: 16) }))
        #expect(accepted - distinct <= (rounds + 1) * maxUnsynced, "\(accepted - distinct) duplicates beyond the bound")
        #expect(injected.values.reduce(0, +) >= 3, "the faults must be hit (counted \(Self.summary(injected)))")
        #expect(delivered.contains { $0 > 0 }, "the runs under faults must forward, not only fail to start: \(delivered)")
        await campaign.stop()
        print(
            "libfiu upload: \(rounds) runs (\(endings), \(hung) start-up hangs retried), injected failures reported: \(Self.summary(injected)); distinct hits at Campaign after each run \(delivered), after the clean run \(distinct) of \(events), \(accepted - distinct) sent twice"
        )
    }

    // MARK: the central side of a relay chain

    static let relayToken = "relay-token-0123456789"
    static let edgeId = "598ef5b4-921c-4ba5-b8e1-ef71a5e2a510"

    /// Posts the edge's events `sequences` (message id = sequence) as one batch.
    static func postBatch(_ http: TestHTTPClient, _ url: String, _ sequences: Range<Int>) async throws -> TestHTTPClient.Answer {
        let events = sequences.map { sequence in
            SequencedEvent(
                sequence: UInt64(sequence),
                event: .tracking(
                    TrackingEvent(
                        action: .open, messageId: MessageID(decimal: Int64(sequence)), deliveryId: "edge",
                        time: recentEventTime)))
        }
        let headers = [
            ("Relay-Id", edgeId), ("Relay-Epoch", "1"), ("Relay-Sequences", "\(sequences.lowerBound)-\(sequences.upperBound)"),
            ("Content-Type", "application/x-campaign-relay-batch"), ("Authorization", "Bearer \(relayToken)"),
        ]
        return try await http.send(
            .POST, url + "/v1/relay/batches", body: RelayBatchBody.encode(events, first: UInt64(sequences.lowerBound)), headers: headers)
    }

    @Test("serve --relay-token under random faults, fed batch by batch as an edge does (a 503 is sent again): each event once at its edge sequence")
    func centralRelay() async throws {
        let binary = try RelayBinary.path()
        let fiu = try Libfiu.require()
        let directory = temporaryDirectory("fiu-central")
        defer { removeTree(directory) }
        let serve = ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--relay-token", Self.relayToken, "--segment-bytes", "16384"]
        try await Self.prepare(binary, serve)
        // One commit per batch, and few batches: higher rates than serve's, so that many are refused.
        let faults = Self.logFaults.map { Fault(point: $0.point, probability: $0.point.hasSuffix("/reduce") ? 0.2 : 0.06) }
        let seed = TestSeed.make(for: "libfiu central relay")
        let started = try await FaultyServe.start(fiu) { attempt in Libfiu.arguments(faults, seed: seed &+ UInt64(attempt), binary: binary, serve) }
        defer { FaultyServe.killIfRunning(started.child) }
        let http = TestHTTPClient()
        let batchSize = 100
        // The central relay's own writes and fdatasyncs, each failed and answered 503 to the edge.
        let floors = Floors(minimum: ["fdatasync": 2, "pwrite": 2])
        // 60 batches at least, as many more as the floors take, at most 240: each is one commit
        // at least, failed by each of the two kinds 6 % of the time.
        var batches = 0
        var unavailable = 0
        var bodies = ""
        var unexpected: [String] = []
        var appended = 0
        var url = "http://127.0.0.1:\(started.port)"
        // The edge's way: a batch refused with 503 is sent again until it is stored.
        while batches < 60 || (!floors.met(Libfiu.injectedFailures(in: bodies)) && batches < 240) {
            let batch = batches
            batches += 1
            let sequences = (1 + batch * batchSize)..<(1 + (batch + 1) * batchSize)
            var stored = false
            for _ in 0..<50 where !stored {
                guard let answer = try? await Self.postBatch(http, url, sequences) else {
                    try await Task.sleep(for: .milliseconds(10))
                    continue
                }
                switch answer.status {
                case 200:
                    stored = true
                    let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
                    appended += object?["appended"] as? Int ?? 0
                    #expect(object?["next"] as? Int == sequences.upperBound, "\(answer.body)")
                case 503:
                    unavailable += 1
                    bodies += answer.body + "\n"
                    #expect(answer.headers.first(name: "Retry-After") != nil)
                    try await Task.sleep(for: .milliseconds(10))
                default:
                    unexpected.append("\(answer.status) \(answer.body)")
                }
            }
            #expect(stored, "batch \(batch) was never stored")
        }
        #expect(started.child.process.isRunning, "the central relay died under the faults: \(started.child.text.suffix(3000))")
        let ending = await FaultyServe.stop(started.child, label: "the central relay under faults")
        #expect(ending == .exited(0) || ending == .exited(1), "\(ending): \(started.child.text.suffix(2000))")

        // Without faults, on the same directory: the last batch again is known, the next ones go on.
        let clean = try await FaultyServe.start(binary, serve)
        defer { FaultyServe.killIfRunning(clean.child) }
        url = "http://127.0.0.1:\(clean.port)"
        let last = (1 + (batches - 1) * batchSize)..<(1 + batches * batchSize)
        let again = try await Self.postBatch(http, url, last)
        #expect(again.body == #"{"alreadyStored":true,"appended":0,"next":\#(last.upperBound)}"#)
        for batch in batches..<batches + 5 {
            let answer = try await Self.postBatch(http, url, (1 + batch * batchSize)..<(1 + (batch + 1) * batchSize))
            #expect(answer.status == 200 && answer.body.contains(#""appended":100"#), "\(answer.status) \(answer.body)")
        }
        await http.shutdown()
        #expect(await FaultyServe.stop(clean.child, label: "the clean central relay") == .exited(0))

        let total = (batches + 5) * batchSize
        let log = try await DumpedLog.read(binary, directory)
        let all = Set((1...total).map(String.init))
        log.check(acknowledged: all, sent: all, label: "the central relay under libfiu")
        for event in log.events {
            let origin = event.line["relayOrigin"] as? [String: Any]
            #expect(origin?["sequence"] as? Int == Int(event.messageId), "event \(event.messageId) carries its edge sequence: \(event.line)")
        }
        let injected = Libfiu.injectedFailures(in: bodies)
        #expect(unexpected.isEmpty, "answers other than 200 and 503: \(unexpected.prefix(5))")
        #expect(appended == batches * batchSize, "each event appended once under faults")
        #expect(unavailable > 0, "the faults must reach the edge as 503")
        #expect(
            floors.met(injected),
            "in \(batches) batches too few injected failures of \(floors.unmet(injected)) reached the edge (floors \(floors.description), counted \(Self.summary(injected)))"
        )
        print(
            "libfiu central relay: \(started.refusedStarts) starts refused, \(started.hungStarts) hung; \(batches) batches of \(batchSize) under faults, \(unavailable) answered 503 and sent again; injected failures in the 503 answers: \(Self.summary(injected)), in the relay's log: \(Self.summary(Libfiu.injectedFailures(in: started.child.text))); \(log.events.count) events in the log, each once"
        )
    }
}

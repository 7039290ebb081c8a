import Foundation
import RelayAggregator
import RelayIO
import RelayProcessTestSupport
import RelaySQLite
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real `campaign-relay aggregate` child process, SIGKILLed at random moments while it consumes
/// a large log. After every kill the aggregates must hold exactly the counts of the log prefix
/// they claim to cover (no event lost or counted twice), and after a final run, of the whole log.
@Suite("kill -9 of a real aggregating process", .serialized, .timeLimit(.minutes(10)), .tier(.thorough), .seedInFailures)
struct AggregatorKillTests {
    static let events = 120_000
    static let cycles = 22

    /// Counts of a prefix of the generated events, computed independently.
    struct Counts: Equatable {
        var totals: [String: [Int]] = [:]
        var uniques: [String: [Int]] = [:]
        var registrations: [String: (count: Int, tokens: Int)] = [:]
        static func == (a: Counts, b: Counts) -> Bool {
            a.totals == b.totals && a.uniques == b.uniques
                && a.registrations.mapValues { [$0.count, $0.tokens] } == b.registrations.mapValues { [$0.count, $0.tokens] }
        }
    }

    enum Line {
        case hit(delivery: String, action: Int, message: Int)
        case registration(app: String, token: Int)
    }

    static func generate() -> [Line] {
        var generator = SeededGenerator(seed: 42)
        return (0..<events).map { _ in
            if generator.next() % 25 == 0 { return .registration(app: "app\(generator.next() % 3)", token: Int(generator.next() % 500)) }
            return .hit(delivery: "d\(generator.next() % 12)", action: Int(generator.next() % 3), message: Int(generator.next() % 3000))
        }
    }

    static func expected(_ lines: ArraySlice<Line>) -> Counts {
        var counts = Counts()
        var seenMessages = Set<String>()
        var seenTokens = Set<String>()
        for line in lines {
            switch line {
            case .hit(let delivery, let action, let message):
                counts.totals[delivery, default: [0, 0, 0]][action] += 1
                if seenMessages.insert("\(delivery)|\(action)|\(message)").inserted { counts.uniques[delivery, default: [0, 0, 0]][action] += 1 }
                if counts.uniques[delivery] == nil { counts.uniques[delivery] = [0, 0, 0] }
            case .registration(let app, let token):
                let isNew = seenTokens.insert("\(app)|\(token)").inserted
                let old = counts.registrations["\(app)|android"] ?? (0, 0)
                counts.registrations["\(app)|android"] = (old.count + 1, old.tokens + (isNew ? 1 : 0))
            }
        }
        return counts
    }

    /// The aggregates as `stats --json` reports them, and the log position they cover.
    static func stats(_ binary: String, _ directory: String) async throws -> (next: Int, counts: Counts) {
        let run = try await RelayBinary.run(binary, ["stats", "--no-catch-up", "--data-dir", directory, "--json"])
        guard run.status == 0, let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any] else {
            throw StatsFailure(description: "stats failed (\(run.status)): \(run.stderr)")
        }
        var counts = Counts()
        for row in object["deliveries"] as? [[String: Any]] ?? [] {
            let id = row["deliveryId"] as? String ?? ""
            counts.totals[id] = ["impressions", "opens", "clicks"].map { row[$0] as? Int ?? -1 }
            counts.uniques[id] = ["uniqueImpressions", "uniqueOpens", "uniqueClicks"].map { row[$0] as? Int ?? -1 }
        }
        for row in object["registrations"] as? [[String: Any]] ?? [] {
            counts.registrations["\(row["integrationKey"] as? String ?? "")|\(row["platform"] as? String ?? "")"] = (
                row["registrations"] as? Int ?? -1, row["distinctTokens"] as? Int ?? -1
            )
        }
        let sequences = object["sequences"] as? [String: Any]
        return (sequences?["next"] as? Int ?? -1, counts)
    }

    /// The aggregates' next sequence as committed now, read with SQLite directly (on a
    /// `BlockingExecutor` thread); `nil` while the database does not exist or cannot be read.
    static func nextSequence(_ database: String) -> Int? {
        guard let connection = try? SQLiteConnection(path: database, readOnly: true) else { return nil }
        defer { connection.close() }
        guard let statement = try? connection.prepare("SELECT next_sequence FROM aggregator_state WHERE id = 1"),
            (try? statement.step()) == true
        else { return nil }
        return Int(statement.int64(0))
    }

    struct StatsFailure: Error, CustomStringConvertible {
        var description: String
    }

    @Test("after every SIGKILL the counts are exactly those of the covered log prefix")
    func killCycles() async throws {
        let binary = try RelayBinary.path()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("aggkill-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lines = Self.generate()
        let actions = ["impression", "open", "click"]
        var text = ""
        for line in lines {
            switch line {
            case .hit(let delivery, let action, let message):
                text +=
                    #"{"kind":"track","action":"\#(actions[action])","messageId":"\#(message)","deliveryId":"\#(delivery)","time":"2026-11-21T10:00:00Z"}"#
                    + "\n"
            case .registration(let app, let token):
                text +=
                    #"{"kind":"register","platform":"android","integrationKey":"\#(app)","registrationToken":"t\#(token)","time":"2026-11-21T10:00:00Z"}"#
                    + "\n"
            }
        }
        let input = "\(directory).jsonl"
        defer { try? FileManager.default.removeItem(atPath: input) }
        try text.write(toFile: input, atomically: true, encoding: .utf8)
        let ingest = try await RelayBinary.run(binary, ["ingest", input, "--data-dir", directory, "--json", "--batch-bytes", "65536"])
        try #require(ingest.status == 0, "\(ingest.stderr)")

        var generator = SeededGenerator(seed: TestSeed.make(for: "aggregator kill cycles"))
        var killedWhileRunning = 0
        var previousNext = 1
        let database = Aggregator.databasePath(dataDirectory: directory)
        let poller = BlockingExecutor(name: "test-poller")
        for cycle in 0..<Self.cycles {
            let child = try SpawnedProcess(binary, ["aggregate", "--data-dir", directory, "--batch-size", "300", "--log-level", "error"])
            // Let it count a random part (2 to 12 %) of what is left, then kill it a random 0 to 3 ms
            // later: right after a commit, in the middle of one, or while reading the log.
            let remaining = Self.events + 1 - previousNext
            let target = previousNext + max(1, remaining * Int(2 + generator.next() % 11) / 100)
            let delay = UInt32(generator.next() % 3_000)
            // Polled on a thread of its own: on the cooperative pool, busy with the other suites, a
            // poll can come too late and find the aggregator done.
            let killedRunning = await poller.run { () -> Bool in
                let deadline = Date().addingTimeInterval(60)
                while child.isRunning, Date() < deadline {
                    if let next = Self.nextSequence(database), next >= target { break }
                    usleep(2_000)
                }
                usleep(delay)
                let running = child.isRunning
                kill(child.processIdentifier, SIGKILL)
                return running
            }
            if killedRunning { killedWhileRunning += 1 }
            await child.exited()

            let (next, counts) = try await Self.stats(binary, directory)
            #expect(next >= previousNext, "cycle \(cycle): position went back from \(previousNext) to \(next)")
            #expect(counts == Self.expected(lines[0..<(next - 1)]), "cycle \(cycle): counts are not those of sequences 1..<\(next)")
            previousNext = next
        }
        let finish = try await RelayBinary.run(binary, ["aggregate", "--data-dir", directory, "--log-level", "error"])
        #expect(finish.status == 0, "\(finish.stderr)")
        let (next, counts) = try await Self.stats(binary, directory)
        #expect(next == Self.events + 1)
        #expect(counts == Self.expected(lines[...]))
        #expect(killedWhileRunning >= Self.cycles * 3 / 4, "most kills must land while the aggregator runs")
        #expect(previousNext > 1 && previousNext < Self.events + 1, "the kills must have interrupted the work midway")
    }
}

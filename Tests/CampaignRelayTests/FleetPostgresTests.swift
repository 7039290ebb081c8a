import Foundation
import NIOConcurrencyHelpers
import RelayProcessTestSupport
import RelayTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Fleet mode against a real PostgreSQL server (a throw-away cluster per test) and real
/// `campaign-relay` processes.
@Suite("Fleet counts in PostgreSQL", .serialized, .timeLimit(.minutes(10)))
struct FleetPostgresTests {
    /// Counts computed from the events the test wrote, independently of the relay.
    struct Expected: Equatable {
        /// delivery → action → every hit.
        var totals: [String: [String: Int]] = [:]
        /// delivery → action → distinct messages, fleet-wide.
        var uniques: [String: [String: Set<String>]] = [:]
        /// "key|platform" → registrations, distinct tokens.
        var registrations: [String: Int] = [:]
        var tokens: [String: Set<String>] = [:]

        var uniqueCounts: [String: [String: Int]] { uniques.mapValues { $0.mapValues(\.count) } }
        var tokenCounts: [String: Int] { tokens.mapValues(\.count) }
    }

    /// `count` JSON lines for relay `relay`: hits on 4 deliveries with message ids shared across
    /// relays (decimal and UUID, the UUIDs in either case), and some registrations.
    static func events(relay: Int, count: Int, generator: inout SeededGenerator, expected: inout Expected) -> String {
        var lines = ""
        lines.reserveCapacity(count * 90)
        let uuidPrefix = "6b6499a8-9d43-4bc5-acf0-b6aeb968"
        for index in 0..<count {
            let roll = generator.next()
            if roll % 25 == 0 {
                let key = "app\(roll % 3)"
                let token = "token\(generator.next() % 300)"
                lines += #"{"kind":"register","platform":"ios","integrationKey":"\#(key)","registrationToken":"\#(token)"}"# + "\n"
                expected.registrations["\(key)|ios", default: 0] += 1
                expected.tokens["\(key)|ios", default: []].insert(token)
                continue
            }
            let delivery = "d\(roll % 4)"
            let action = ["impression", "open", "click"][Int(generator.next() % 3)]
            let number = generator.next() % 3000
            let message: String
            let identity: String
            if number % 5 == 0 {
                let suffix = String(format: "%04x", number)
                message = generator.next() % 2 == 0 ? uuidPrefix + suffix : (uuidPrefix + suffix).uppercased()
                identity = "uuid:" + uuidPrefix + suffix
            } else {
                message = String(number)
                identity = "int:\(number)"
            }
            lines +=
                #"{"kind":"track","action":"\#(action)","messageId":"\#(message)","deliveryId":"\#(delivery)","time":"2026-11-22T10:00:\#(String(format: "%02d", index % 60)).000Z"}"#
                + "\n"
            expected.totals[delivery, default: [:]][action, default: 0] += 1
            expected.uniques[delivery, default: [:]][action, default: []].insert(identity)
        }
        return lines
    }

    /// The fleet's counts as `stats --postgres-url --json` prints them.
    static func fleetCounts(_ binary: String, _ url: String) async throws -> (Expected, [[String: Any]]) {
        let stats = try await RelayBinary.run(binary, ["stats", "--postgres-url", url, "--json"])
        try #require(stats.status == 0, "stats: \(stats.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any], "\(stats.stdout)")
        var counted = Expected()
        var uniques: [String: [String: Int]] = [:]
        for row in report["deliveries"] as? [[String: Any]] ?? [] {
            let delivery = row["deliveryId"] as? String ?? ""
            for (action, total, unique) in [
                ("impression", "impressions", "uniqueImpressions"), ("open", "opens", "uniqueOpens"), ("click", "clicks", "uniqueClicks"),
            ]
            where (row[total] as? Int ?? 0) > 0 {
                counted.totals[delivery, default: [:]][action] = row[total] as? Int
                uniques[delivery, default: [:]][action] = row[unique] as? Int
            }
        }
        var tokens: [String: Int] = [:]
        for row in report["registrations"] as? [[String: Any]] ?? [] {
            let key = "\(row["integrationKey"] as? String ?? "")|\(row["platform"] as? String ?? "")"
            counted.registrations[key] = row["registrations"] as? Int
            tokens[key] = row["distinctTokens"] as? Int
        }
        // Uniques and tokens come back as numbers; carried in `totals`-shaped maps for comparison.
        counted.uniques = uniques.mapValues { $0.mapValues { Set((0..<$0).map(String.init)) } }
        counted.tokens = tokens.mapValues { Set((0..<$0).map(String.init)) }
        return (counted, report["relays"] as? [[String: Any]] ?? [])
    }

    static func ingest(_ binary: String, _ directory: String, _ lines: String) async throws {
        let ingest = try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", directory, "--json"], input: Data(lines.utf8))
        try #require(ingest.status == 0, "ingest: \(ingest.stderr)")
    }

    @Test(
        "three relays aggregating at once, killed -9 again and again, PostgreSQL restarted -m immediate midway: fleet totals and uniques equal an independent count"
    )
    func threeRelaysUnderKills() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start()
        let root = temporaryDirectory("fleet-kill")
        var generator = SeededGenerator(seed: TestSeed.make(for: "fleet kill -9"))
        var expected = Expected()
        let perRelay = 80_000
        let directories = (0..<3).map { "\(root)/relay\($0)" }
        for (index, directory) in directories.enumerated() {
            try await Self.ingest(binary, directory, Self.events(relay: index, count: perRelay, generator: &generator, expected: &expected))
        }
        let arguments = { (directory: String) in
            ["aggregate", "--postgres-url", postgres.url, "--data-dir", directory, "--batch-size", "1000", "--json", "--log-level", "error"]
        }
        func counted() async -> Int { Int((try? await postgres.psql("SELECT coalesce(sum(events), 0) FROM relay_positions")) ?? "") ?? 0 }

        var kills = 0
        var restarted = false
        for cycle in 0..<8 {
            let before = await counted()
            if before >= 3 * perRelay { break }
            let children = try directories.map { try ChildProcess(binary, arguments($0)) }
            // Kill when the fleet has counted some thousands more (or when the children are done).
            let target = before + 500 + Int(generator.next() % 2500)
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline, children.contains(where: { $0.process.isRunning }), await counted() < target {
                try await Task.sleep(for: .milliseconds(5))
            }
            if cycle == 3 {
                // PostgreSQL crashes under the aggregators and recovers; they fail and are started again.
                try await postgres.restartImmediately()
                restarted = true
            }
            usleep(UInt32(generator.next() % 4000))
            for child in children where child.process.isRunning {
                kill(child.process.processIdentifier, SIGKILL)
                kills += 1
            }
            for child in children { child.process.waitUntilExit() }
        }
        #expect(kills >= 6, "the aggregators must be killed while counting (\(kills) kills)")
        #expect(restarted)
        for directory in directories {
            let finish = try await RelayBinary.run(binary, arguments(directory), seconds: 120)
            #expect(finish.status == 0, "\(finish.stderr)")
        }

        let (fleet, relays) = try await Self.fleetCounts(binary, postgres.url)
        #expect(fleet.totals == expected.totals)
        #expect(fleet.uniqueCounts == expected.uniqueCounts, "uniques are fleet-wide: a message seen by two relays counts once")
        #expect(fleet.registrations == expected.registrations)
        #expect(fleet.tokenCounts == expected.tokenCounts)
        #expect(relays.count == 3)
        #expect(relays.allSatisfy { $0["events"] as? Int == perRelay && $0["nextSequence"] as? Int == perRelay + 1 }, "\(relays)")
        print("fleet kill test: \(kills) aggregator kills, 1 immediate PostgreSQL restart, \(3 * perRelay) events counted exactly")
        await postgres.destroy()
        removeTree(root)
    }

    @Test("10 relays starting at once on an empty database: one schema, and every relay counts")
    func concurrentMigrations() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start()
        let root = temporaryDirectory("fleet-migrate")
        var generator = SeededGenerator(seed: 7)
        var expected = Expected()
        let directories = (0..<10).map { "\(root)/relay\($0)" }
        for (index, directory) in directories.enumerated() {
            try await Self.ingest(binary, directory, Self.events(relay: index, count: 200, generator: &generator, expected: &expected))
        }
        let children = try directories.map {
            try ChildProcess(binary, ["aggregate", "--postgres-url", postgres.url, "--data-dir", $0, "--json", "--log-level", "notice"])
        }
        for child in children { #expect(await child.exit(within: 60), "\(child.text)") }
        #expect(children.allSatisfy { $0.process.terminationStatus == 0 }, "\(children.map(\.text))")
        #expect(try await postgres.psql("SELECT string_agg(version::text, ',') FROM campaign_relay_schema") == "1")
        let migrated = children.filter { $0.text.contains("migrated the fleet schema") }.count
        #expect(migrated == 1, "exactly one relay migrates; the others find it done (\(migrated))")
        let (fleet, relays) = try await Self.fleetCounts(binary, postgres.url)
        #expect(relays.count == 10)
        #expect(fleet.totals == expected.totals)
        #expect(fleet.uniqueCounts == expected.uniqueCounts)
        await postgres.destroy()
        removeTree(root)
    }

    /// What the clients of `postgresDownUnderServe` got acknowledged, per delivery.
    final class ServeLoad: Sendable {
        let acknowledged = NIOLockedValueBox<[String: Int]>([:])
        let stopping = Atomic<Bool>(false)
    }

    @Test(
        "serve --postgres-url under load with PostgreSQL stopped 10 s: every acknowledged event kept, /readyz says why, counts exact once it returns")
    func postgresDownUnderServe() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start()
        let directory = temporaryDirectory("fleet-serve")
        let relay = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--postgres-url", postgres.url])
        let port = try await relay.await(#"address=127\.0\.0\.1:(\d+)"#)
        let url = "http://127.0.0.1:\(port)"
        let http = TestHTTPClient()
        let shared = ServeLoad()
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for client in 0..<2 {
                    group.addTask {
                        var next = client * 1_000_000
                        while !shared.stopping.load(ordering: .relaxed) {
                            let ids = next..<next + 50
                            next += 50
                            let body = ids.map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"d\#(client)"}"# }.joined(
                                separator: "\n")
                            if let answer = try? await http.post(url + "/v1/events", body, headers: [("Content-Type", "application/x-ndjson")]),
                                answer.status == 200
                            {
                                shared.acknowledged.withLockedValue { $0["d\(client)", default: 0] += ids.count }
                            }
                            try? await Task.sleep(for: .milliseconds(2))
                        }
                    }
                }
            }
        }
        try await waitUntil("the fleet aggregator to count", seconds: 30) {
            (try? await postgres.psql("SELECT coalesce(sum(events), 0) FROM relay_positions")).flatMap { Int($0) }.map { $0 > 1000 } ?? false
        }
        try await postgres.stop()
        let stopped = ContinuousClock.now
        let beforeOutage = shared.acknowledged.withLockedValue { $0.values.reduce(0, +) }
        // Within the outage /readyz says why counting waits (at once for a refused connection,
        // after the 5 s operation timeout for a query left without an answer). PostgreSQL stays
        // down until this and the load below are seen, so the wait may be long on a busy machine.
        try await waitUntil("/readyz to report the failure", seconds: 60) {
            try await http.get(url + "/readyz").body.contains(#""failingSince":""#)
        }
        try await Task.sleep(until: stopped + .seconds(10))
        // On a loaded machine the clients may not have run for most of those 10 s.
        try await waitUntil("1,000 events acknowledged while PostgreSQL is down", seconds: 90) {
            shared.acknowledged.withLockedValue { $0.values.reduce(0, +) } - beforeOutage > 1000
        }
        let ready = try await http.get(url + "/readyz")
        let readiness = try #require(try JSONSerialization.jsonObject(with: Data(ready.body.utf8)) as? [String: Any])
        let state = try #require(readiness["postgres"] as? [String: Any], "\(ready.body)")
        #expect(ready.status == 200, "PostgreSQL down does not make the relay unready")
        #expect(state["failingSince"] is String, "\(state)")
        #expect((state["lastError"] as? String)?.isEmpty == false, "\(state)")
        #expect((state["lag"] as? Int ?? 0) > 0, "\(state)")
        let metrics = try await http.get(url + "/metrics").body
        #expect(metrics.contains("relay_postgres_errors_total"), "errors counted")
        #expect(shared.acknowledged.withLockedValue { $0.values.reduce(0, +) } - beforeOutage > 1000, "ingest went on while PostgreSQL was down")
        try await postgres.resume()
        try await Task.sleep(for: .seconds(2))
        shared.stopping.store(true, ordering: .relaxed)
        await load.value
        try await waitUntil("PostgreSQL to have caught up", seconds: 90) {
            let body = try await http.get(url + "/readyz").body
            return body.contains(#""lag":0"#) && body.contains(#""failingSince":null"#)
        }
        await http.shutdown()
        relay.stop()
        let (fleet, _) = try await Self.fleetCounts(binary, postgres.url)
        let sent = shared.acknowledged.withLockedValue { $0 }
        let counted = fleet.totals.mapValues { $0["open"] ?? 0 }
        // Every acknowledged event is counted; requests cut by nothing here, so counted == acknowledged.
        #expect(counted == sent, "counted \(counted), acknowledged \(sent)")
        #expect(fleet.uniqueCounts.mapValues { $0["open"] ?? 0 } == sent)
        await postgres.destroy()
        removeTree(directory)
    }

    @Test("sslmode: require and verify-full (with sslrootcert) count over TLS; verify-full without the CA is refused, naming the failure")
    func tlsModes() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start(tls: true)
        let directory = temporaryDirectory("fleet-tls")
        var generator = SeededGenerator(seed: 11)
        var expected = Expected()
        try await Self.ingest(binary, directory, Self.events(relay: 0, count: 300, generator: &generator, expected: &expected))
        let base = "postgres://postgres@localhost:\(postgres.port)/postgres"
        let required = try await RelayBinary.run(
            binary, ["aggregate", "--postgres-url", base + "?sslmode=require", "--data-dir", directory, "--json"])
        #expect(required.status == 0, "\(required.stderr)")
        let verified = base + "?sslmode=verify-full&sslrootcert=\(postgres.certificate)"
        let (fleet, _) = try await Self.fleetCounts(binary, verified)
        #expect(fleet.totals == expected.totals)
        // The server takes TCP connections over TLS only (hostssl): without it the relay is refused.
        let clear = try await RelayBinary.run(binary, ["stats", "--postgres-url", base + "?sslmode=disable"])
        #expect(clear.status == 1)
        #expect(clear.stderr.contains("no pg_hba.conf entry"), "\(clear.stderr)")
        let unverified = try await RelayBinary.run(binary, ["stats", "--postgres-url", base + "?sslmode=verify-full"])
        #expect(unverified.status == 1)
        #expect(unverified.stderr.contains("handshakeFailed"), "\(unverified.stderr)")
        let bogus = try await RelayBinary.run(binary, ["stats", "--postgres-url", base + "?sslmode=bogus"])
        #expect(bogus.stderr.contains("sslmode bogus is not one of disable, prefer, require, verify-ca, verify-full"), "\(bogus.stderr)")
        await postgres.destroy()
        removeTree(directory)
    }
}

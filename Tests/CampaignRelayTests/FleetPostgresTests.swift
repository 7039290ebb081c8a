import Foundation
import NIOConcurrencyHelpers
import RelayAggregates
import RelayAggregator
import RelayCore
import RelayLog
import RelayPostgres
import RelayProcessTestSupport
import RelayTestSupport
import Synchronization
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Fleet mode against a real PostgreSQL server (a throw-away cluster per test) and real
/// `campaign-relay` processes; the schema's migrations and the per-tenant counts also in-process,
/// through RelayPostgres itself.
@Suite("Fleet counts in PostgreSQL", .serialized, .timeLimit(.minutes(10)), .tier(.thorough), .seedInFailures)
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
            // These tests write events of the default tenant only.
            #expect(row["tenant"] as? String == "default", "\(row)")
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
            #expect(row["tenant"] as? String == "default", "\(row)")
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
            try await Task.sleep(for: .microseconds(generator.next() % 4000))
            for child in children where child.process.isRunning {
                kill(child.process.processIdentifier, SIGKILL)
                kills += 1
            }
            for child in children { await child.process.exited() }
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
        #expect(try await postgres.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM campaign_relay_schema") == "1,2,3,4")
        // The relay that migrates logs both migrations (1 and 2); the others log neither.
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
        await relay.stop()
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

    // MARK: - Schema version 2: counts per tenant

    /// The time of every event of the in-process tests: a report's rows then come in tenant order
    /// (the default tenant, stored `''`, first), then delivery id.
    static let eventTime = EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000)

    static func hit(_ action: TrackingAction, _ message: String, _ delivery: String, _ tenant: TenantName? = nil) throws -> Event {
        var event = Event.tracking(TrackingEvent(action: action, messageId: try MessageID(message), deliveryId: delivery, time: eventTime))
        event.tenant = tenant
        return event
    }

    static func registration(_ key: String, _ platform: Platform, _ token: String, _ tenant: TenantName? = nil) -> Event {
        var event = Event.registration(Registration(platform: platform, integrationKey: key, registrationToken: token, time: eventTime))
        event.tenant = tenant
        return event
    }

    /// What a report should say of a delivery: totals and uniques as (impressions, opens, clicks).
    static func delivery(_ tenant: String, _ id: String, _ totals: (Int64, Int64, Int64), unique: (Int64, Int64, Int64)) -> DeliveryCounts {
        DeliveryCounts(
            tenant: tenant, deliveryId: id, impressions: totals.0, opens: totals.1, clicks: totals.2, uniqueImpressions: unique.0,
            uniqueOpens: unique.1, uniqueClicks: unique.2, firstEvent: eventTime, lastEvent: eventTime)
    }

    static func app(_ tenant: String, _ key: String, _ platform: Platform, registrations: Int64, tokens: Int64) -> RegistrationCounts {
        RegistrationCounts(
            tenant: tenant, integrationKey: key, platform: platform, registrations: registrations, distinctTokens: tokens, firstEvent: eventTime,
            lastEvent: eventTime)
    }

    /// Counts what `log` holds beyond its position in the database at `url`, as a relay's
    /// aggregator does (migrating the schema first); returns how many events it counted.
    static func countIntoFleet(_ log: WriteAheadLog, _ url: String) async throws -> Int {
        try await PostgresLocation(url: url).connectedSession(logger: quietLogger) { connection, watch in
            let aggregator = try await FleetAggregator(connection: connection, watch: watch, log: log, logger: quietLogger)
            let summary = try await aggregator.catchUp()
            await aggregator.close()
            return summary.events
        }
    }

    @Test(
        "a version-1 database, counted into as version 1 did, migrates to version 2: every count, delivery_ref and token kept under the default tenant, and counting goes on in the same rows"
    )
    func migrationFromVersion1() async throws {
        let postgres = try await TestPostgres.start()
        let directory = temporaryDirectory("fleet-v1")
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [FleetAggregator.consumer], logger: quietLogger)
        let location = try PostgresLocation(url: postgres.url)
        // The database as the release before tenants made it: migration 1 and nothing of 2.
        let empty = try await location.connectedSession(logger: quietLogger) { connection, _ in
            try await FleetSchema.migrate(connection, upTo: 1, logger: quietLogger)
        }
        #expect(empty == 0)
        #expect(try await postgres.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM campaign_relay_schema") == "1")
        #expect(try await postgres.psql("SELECT count(*) FROM information_schema.columns WHERE column_name = 'tenant'") == "0")

        // This relay's first 7 events, counted by a version-1 aggregator, and 4 of another relay's:
        // their rows written as version 1 wrote them (a position per relay, counts per relay,
        // uniques and tokens fleet-wide; an unused `deliveries` row, as a failed batch leaves).
        let uuid = "6b6499a8-9d43-4bc5-acf0-b6aeb9680001"
        let appended = try await log.append([
            try Self.hit(.open, "1", "d1"), try Self.hit(.open, "1", "d1"), try Self.hit(.click, "2", "d1"), try Self.hit(.impression, uuid, "d2"),
            Self.registration("k1", .ios, "t1"), Self.registration("k1", .ios, "t1"), Self.registration("k2", .android, "t9"),
        ])
        #expect(appended == 1..<8)
        let relay = log.identity.relayID
        let other = "0b6a1c1e-7f43-4d7e-9a51-2f1c8d3e4b5a"
        let time = Self.eventTime.nanosecondsSinceEpoch
        _ = try await postgres.psql("INSERT INTO deliveries (delivery_id) VALUES ('unused'), ('d1'), ('d2')")
        /// The ref of delivery `id`; of the default tenant when the schema has tenants.
        func reference(_ id: String, tenants: Bool = false) async throws -> Int64 {
            try #require(
                Int64(
                    try await postgres.psql("SELECT delivery_ref FROM deliveries WHERE delivery_id = '\(id)'" + (tenants ? " AND tenant = ''" : ""))))
        }
        let (unused, d1, d2) = (try await reference("unused"), try await reference("d1"), try await reference("d2"))
        _ = try await postgres.psql(
            """
            INSERT INTO relay_positions (relay_id, epoch, next_sequence, events, updated_at) VALUES ('\(relay)', 1, 8, 7, now()), ('\(other)', 1, 5, 4, now());
            INSERT INTO delivery_counts (delivery_ref, relay_id, impressions, opens, clicks, unique_impressions, unique_opens, unique_clicks, first_event_ns, last_event_ns)
            VALUES (\(d1), '\(relay)', 0, 2, 1, 0, 1, 1, \(time), \(time)), (\(d2), '\(relay)', 1, 0, 0, 1, 0, 0, \(time), \(time)),
                   (\(d1), '\(other)', 0, 3, 0, 0, 1, 0, \(time), \(time));
            INSERT INTO delivery_messages (delivery_action, message_key) VALUES (\(d1 * 4 + 1), 1), (\(d1 * 4 + 2), 2), (\(d1 * 4 + 1), 7);
            INSERT INTO delivery_message_uuids (delivery_action, message_uuid) VALUES (\(d2 * 4), '\(uuid)');
            INSERT INTO registration_counts (integration_key, platform, relay_id, registrations, distinct_tokens, first_event_ns, last_event_ns)
            VALUES ('k1', 'ios', '\(relay)', 2, 1, \(time), \(time)), ('k2', 'android', '\(relay)', 1, 1, \(time), \(time)),
                   ('k1', 'ios', '\(other)', 1, 1, \(time), \(time));
            INSERT INTO registration_tokens (integration_key, platform, registration_token) VALUES ('k1', 'ios', 't1'), ('k2', 'android', 't9'), ('k1', 'ios', 't2')
            """)
        let stats = "delivery_id, impressions, opens, clicks, unique_impressions, unique_opens, unique_clicks, relays"
        let registrations =
            "SELECT integration_key, platform, sum(registrations), sum(distinct_tokens) FROM registration_counts GROUP BY 1, 2 ORDER BY 1, 2"
        #expect(try await postgres.psql("SELECT \(stats) FROM delivery_stats ORDER BY delivery_id") == "d1|0|5|1|0|2|1|2\nd2|1|0|0|1|0|0|1")
        #expect(try await postgres.psql(registrations) == "k1|ios|3|2\nk2|android|1|1")

        let found = try await location.connectedSession(logger: quietLogger) { connection, _ in
            try await FleetSchema.migrate(connection, logger: quietLogger)
        }
        #expect(found == 1)
        #expect(try await postgres.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM campaign_relay_schema") == "1,2,3,4")
        // Every row is the default tenant's, every delivery keeps its ref (the counts and the
        // uniques point at it), and the keys are the tenant's.
        #expect(
            try await postgres.psql(
                "SELECT string_agg(delivery_ref || '/' || tenant || '/' || delivery_id, ',' ORDER BY delivery_ref) FROM deliveries")
                == "\(unused)//unused,\(d1)//d1,\(d2)//d2")
        #expect(
            try await postgres.psql(
                """
                SELECT string_agg(tenant || '/' || integration_key || '/' || platform || '/' || registration_token, ',' ORDER BY integration_key, registration_token)
                FROM registration_tokens
                """)
                == [("k1", "ios", "t1"), ("k1", "ios", "t2"), ("k2", "android", "t9")]
                .map { (key: $0.0, platform: $0.1, digest: KnownDigests.sha256(of: $0.2)) }
                .sorted { ($0.key, $0.digest) < ($1.key, $1.digest) }
                .map { "/\($0.key)/\($0.platform)/\($0.digest)" }.joined(separator: ","))
        #expect(try await postgres.psql("SELECT count(*) FILTER (WHERE tenant = ''), count(*) FROM registration_counts") == "3|3")
        #expect(
            try await postgres.psql(
                """
                SELECT conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
                WHERE conrelid IN ('deliveries'::regclass, 'registration_counts'::regclass, 'registration_tokens'::regclass) ORDER BY conname
                """)
                    == """
                    deliveries_pkey PRIMARY KEY (delivery_ref)
                    deliveries_tenant_delivery_id_key UNIQUE (tenant, delivery_id)
                    registration_counts_pkey PRIMARY KEY (tenant, integration_key, platform, relay_id)
                    registration_tokens_pkey PRIMARY KEY (tenant, integration_key, platform, registration_token)
                    """)
        #expect(try await postgres.psql("SELECT tenant, \(stats) FROM delivery_stats ORDER BY delivery_id") == "|d1|0|5|1|0|2|1|2\n|d2|1|0|0|1|0|0|1")
        #expect(try await postgres.psql(registrations) == "k1|ios|3|2\nk2|android|1|1")
        let queries = FleetQueries(location: location, logger: quietLogger)
        let migrated = try await queries.report()
        #expect(
            migrated.deliveries == [
                Self.delivery("default", "d1", (0, 5, 1), unique: (0, 2, 1)), Self.delivery("default", "d2", (1, 0, 0), unique: (1, 0, 0)),
            ])
        #expect(
            migrated.registrations == [
                Self.app("default", "k1", .ios, registrations: 3, tokens: 2), Self.app("default", "k2", .android, registrations: 1, tokens: 1),
            ])
        let again = try await location.connectedSession(logger: quietLogger) { connection, _ in
            try await FleetSchema.migrate(connection, logger: quietLogger)
        }
        #expect(again == FleetSchema.version, "a second start finds version \(FleetSchema.version) and changes nothing")

        // The relay goes on from its position with version 2: messages and tokens seen before
        // (by it or by the other relay) are not unique again, its rows grow, a new tenant's
        // delivery of the same id is a delivery of its own.
        let brandA = try TenantName(validating: "brand-a")
        _ = try await log.append([
            try Self.hit(.open, "1", "d1"), try Self.hit(.open, "3", "d1"), try Self.hit(.open, "7", "d1"),
            try Self.hit(.impression, uuid.uppercased(), "d2"),
            try Self.hit(.click, "4", "d3"), try Self.hit(.open, "1", "d1", brandA),
            Self.registration("k1", .ios, "t1"), Self.registration("k1", .ios, "t2"), Self.registration("k1", .ios, "t3"),
            Self.registration("k1", .ios, "t1", brandA),
        ])
        #expect(try await Self.countIntoFleet(log, postgres.url) == 10, "counting goes on after the 7 events version 1 counted")
        let report = try await queries.report()
        #expect(
            report.deliveries == [
                Self.delivery("default", "d1", (0, 8, 1), unique: (0, 3, 1)), Self.delivery("default", "d2", (2, 0, 0), unique: (1, 0, 0)),
                Self.delivery("default", "d3", (0, 0, 1), unique: (0, 0, 1)), Self.delivery("brand-a", "d1", (0, 1, 0), unique: (0, 1, 0)),
            ])
        #expect(
            report.registrations == [
                Self.app("default", "k1", .ios, registrations: 6, tokens: 3), Self.app("default", "k2", .android, registrations: 1, tokens: 1),
                Self.app("brand-a", "k1", .ios, registrations: 1, tokens: 1),
            ])
        #expect(
            report.relays.map { "\($0.relayId) \($0.epoch) \($0.nextSequence) \($0.events)" }.sorted()
                == ["\(other) 1 5 4", "\(relay) 1 18 17"].sorted())
        #expect(try await reference("d1", tenants: true) == d1)
        #expect(try await reference("d2", tenants: true) == d2)
        #expect(
            try await postgres.psql("SELECT count(*) FROM deliveries WHERE delivery_id = 'd1' AND tenant = 'brand-a' AND delivery_ref > \(d2)") == "1"
        )
        #expect(
            try await postgres.psql("SELECT opens, unique_opens FROM delivery_counts WHERE delivery_ref = \(d1) AND relay_id = '\(relay)'") == "5|2")
        #expect(try await postgres.psql("SELECT count(*) FROM delivery_counts") == "5")
        #expect(
            try await postgres.psql(
                "SELECT registrations, distinct_tokens FROM registration_counts WHERE tenant = '' AND integration_key = 'k1' AND relay_id = '\(relay)'"
            )
                == "5|2")
        await log.close()
        await postgres.destroy()
        removeTree(directory)
    }

    @Test(
        "one delivery id under brand-a, brand-b and the default tenant, counted by two relays at once, is three deliveries; apps and tokens are per tenant too"
    )
    func countsPerTenant() async throws {
        let postgres = try await TestPostgres.start()
        let directories = [temporaryDirectory("fleet-tenants"), temporaryDirectory("fleet-tenants")]
        let brandA = try TenantName(validating: "brand-a")
        let brandB = try TenantName(validating: "brand-b")
        let first = try await WriteAheadLog.open(dataDirectory: directories[0], consumers: [FleetAggregator.consumer], logger: quietLogger)
        let second = try await WriteAheadLog.open(dataDirectory: directories[1], consumers: [FleetAggregator.consumer], logger: quietLogger)
        // Message 1 opened under two tenants is unique in each; brand-a's, seen again by the
        // second relay, is not unique again. Token t1 of app k1 is a distinct token of each tenant.
        _ = try await first.append([
            try Self.hit(.open, "1", "d1"), try Self.hit(.open, "1", "d1", brandA), try Self.hit(.open, "1", "d1", brandA),
            try Self.hit(.click, "2", "d1", brandB), Self.registration("k1", .ios, "t1"), Self.registration("k1", .ios, "t1", brandA),
        ])
        _ = try await second.append([
            try Self.hit(.open, "1", "d1", brandA), try Self.hit(.open, "5", "d1", brandA), try Self.hit(.impression, "1", "d1"),
            Self.registration("k1", .ios, "t1", brandA), Self.registration("k1", .ios, "t2", brandA), Self.registration("k1", .ios, "t1", brandB),
        ])
        async let countedFirst = Self.countIntoFleet(first, postgres.url)
        async let countedSecond = Self.countIntoFleet(second, postgres.url)
        #expect(try await countedFirst == 6)
        #expect(try await countedSecond == 6)

        let defaultD1 = Self.delivery("default", "d1", (1, 1, 0), unique: (1, 1, 0))
        let brandAD1 = Self.delivery("brand-a", "d1", (0, 4, 0), unique: (0, 2, 0))
        let brandBD1 = Self.delivery("brand-b", "d1", (0, 0, 1), unique: (0, 0, 1))
        let defaultK1 = Self.app("default", "k1", .ios, registrations: 1, tokens: 1)
        let brandAK1 = Self.app("brand-a", "k1", .ios, registrations: 3, tokens: 2)
        let brandBK1 = Self.app("brand-b", "k1", .ios, registrations: 1, tokens: 1)
        let queries = FleetQueries(location: try PostgresLocation(url: postgres.url), logger: quietLogger)
        let all = try await queries.report()
        #expect(all.deliveries == [defaultD1, brandAD1, brandBD1])
        #expect(all.registrations == [defaultK1, brandAK1, brandBK1])
        #expect(all.relays.count == 2)
        let onlyA = try await queries.report(tenant: .only(brandA))
        #expect(onlyA.deliveries == [brandAD1])
        #expect(onlyA.registrations == [brandAK1])
        let onlyDefault = try await queries.report(tenant: .only(nil))
        #expect(onlyDefault.deliveries == [defaultD1])
        #expect(onlyDefault.registrations == [defaultK1])
        let oneOfB = try await queries.report(tenant: .only(brandB), deliveryId: "d1")
        #expect(oneOfB.deliveries == [brandBD1])
        #expect(oneOfB.registrations.isEmpty, "a report of one delivery leaves registrations out")
        #expect(try await queries.report(deliveryId: "d1").deliveries == [defaultD1, brandAD1, brandBD1])
        #expect(try await queries.report(limit: 2).deliveries == [defaultD1, brandAD1])
        let none = try await queries.report(tenant: .only(try TenantName(validating: "brand-c")))
        #expect(none.deliveries.isEmpty && none.registrations.isEmpty)

        #expect(try await postgres.psql("SELECT count(*) FROM deliveries WHERE delivery_id = 'd1'") == "3")
        #expect(
            try await postgres.psql(
                "SELECT string_agg(tenant || '/' || registration_token, ',' ORDER BY tenant, registration_token) FROM registration_tokens")
                == [("", "t1"), ("brand-a", "t1"), ("brand-a", "t2"), ("brand-b", "t1")].map { ($0.0, KnownDigests.sha256(of: $0.1)) }
                .sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map { "\($0.0)/\($0.1)" }.joined(separator: ","))
        #expect(
            try await postgres.psql(
                "SELECT tenant, delivery_id, impressions, opens, clicks, unique_impressions, unique_opens, unique_clicks, relays FROM delivery_stats ORDER BY tenant"
            ) == "|d1|1|1|0|1|1|0|2\nbrand-a|d1|0|4|0|0|2|0|2\nbrand-b|d1|0|0|1|0|0|1|1")
        await first.close()
        await second.close()
        await postgres.destroy()
        for directory in directories { removeTree(directory) }
    }
}

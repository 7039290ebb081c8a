import Foundation
import RelayAggregates
import RelayAggregator
import RelayCore
import RelayEventJSON
import RelayIO
import RelayLog
import RelayPostgres
import RelayProcessTestSupport
import RelayServer
import RelayTestSupport
import Synchronization
import TestTiers
import Testing

/// A metric is one declaration: both backends (a SQLite file and a real PostgreSQL) built from the
/// standard table plus one metric declared here, `weekendRegistrations`, see it migrated onto a
/// database the standard table made, counted exactly once across an abandoned catch-up, taken out
/// by an erasure, and listed by `/v1/deliveries` (and `/v1/status` and the status page).
///
/// The metric counts registrations whose own time falls on a Saturday or a Sunday (UTC). The brief
/// suggested "late hits" (a hit's own time more than an hour before it arrived), but the log keeps
/// no arrival time per event; and an erasure takes registrations out, never hits, so a per-app
/// metric over registrations is the one an erasure can be seen to uncount.
@Suite("A metric is one declaration: declared in a test, counted by both backends", .timeLimit(.minutes(5)), .tier(.fast))
struct MetricDeclarationTests {
    /// Registrations on a Saturday or a Sunday, UTC (1970-01-01 was a Thursday).
    static let weekendRegistrations = AggregateMetric(
        "weekendRegistrations", .total,
        .registrations(
            RegistrationPredicate { facts in
                let day = facts.timeNanoseconds / 86_400_000_000_000
                let weekday = (day + 4) % 7  // 0 Sunday … 6 Saturday
                return weekday == 0 || weekday == 6
            }))
    static let table = MetricTable.standard.adding(weekendRegistrations)
    /// How long a PostgreSQL operation may go unanswered: a tier runs this beside other suites on a
    /// busy machine, where a cluster just made may answer late (the sessions' 5 s default gave up
    /// once).
    static let patience = Duration.seconds(60)

    /// Saturday 2026-11-21 and Monday 2026-11-23, 09:00 UTC.
    static let saturday: Int64 = 1_795_251_600_000_000_000
    static let monday: Int64 = saturday + 2 * 86_400_000_000_000

    static func registration(_ token: String, at time: Int64) -> Event {
        .registration(
            Registration(platform: .ios, integrationKey: "app", registrationToken: token, time: EventTime(nanosecondsSinceEpoch: time)))
    }

    /// Before the metric: two registrations (one on a Saturday) and a hit.
    static let before: [Event] = [
        registration("early-saturday", at: saturday), registration("early-monday", at: monday),
        .tracking(TrackingEvent(action: .open, messageId: MessageID(decimal: 7), deliveryId: "d", time: EventTime(nanosecondsSinceEpoch: monday))),
    ]
    /// After it: 200 registrations, every other one on a Saturday, each a token of its own.
    static let after: [Event] = (0..<200).map { registration("token-\($0)", at: ($0 % 2 == 0 ? saturday : monday) + Int64($0)) }

    /// An erasure's target for the `index`th registration of ``after`` (at log sequence
    /// `before.count + 1 + index`).
    static func target(_ index: Int) -> ErasurePlan.Target {
        ErasurePlan.Target(
            sequence: UInt64(before.count + 1 + index), tenant: "", integrationKey: "app", platform: "ios",
            tokenDigest: TokenDigest.hex("token-\(index)"),
            timeNanoseconds: (index % 2 == 0 ? saturday : monday) + Int64(index), originRelayId: nil, viaRelayId: nil, forwarded: false,
            handedOn: false)
    }

    /// A log holding ``before`` then ``after``, declaring both aggregators.
    static func log(_ directory: String) async throws -> WriteAheadLog {
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, consumers: [Aggregator.consumer, FleetAggregator.consumer], logger: quietLogger)
        _ = try await log.append(before)
        return log
    }

    @Test(
        "SQLite: migrated onto an existing database, counted exactly once across an abandoned catch-up, uncounted by an erasure, listed by /v1/deliveries"
    )
    func sqlite() async throws {
        let directory = temporaryDirectory("metric-sqlite")
        defer { removeTree(directory) }
        let log = try await Self.log(directory)
        // The database as the standard table makes it.
        let standard = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        _ = try await standard.catchUp()
        await standard.close()
        let path = Aggregator.databasePath(dataDirectory: directory)
        let old = try #require(try await AggregateQueries(path: path, metrics: Self.table).registrations().first)
        #expect(old.registrations == 2 && old["weekendRegistrations"] == 0, "a database without the column reads it as 0: \(old)")

        // Migrated: the column is added, the counts kept.
        _ = try await log.append(Self.after)
        let abandoned = try await Aggregator(log: log, dataDirectory: directory, batchSize: 7, metrics: Self.table, logger: quietLogger)
        let migrated = try #require(try await AggregateQueries(path: path, metrics: Self.table).registrations().first)
        #expect(migrated.registrations == 2 && migrated.distinctTokens == 2 && migrated["weekendRegistrations"] == 0)
        // Abandoned mid-way (never closed), then another aggregator goes on from the stored position.
        let ended = Ended()
        let catchingUp = Task {
            defer { ended.mark() }
            return try await abandoned.catchUp()
        }
        while await abandoned.nextSequence < 60, !ended.value { try await Task.sleep(for: .milliseconds(1)) }
        catchingUp.cancel()
        _ = try await catchingUp.value
        #expect(await abandoned.nextSequence < 204, "the catch-up stopped before the end")
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, batchSize: 7, metrics: Self.table, logger: quietLogger)
        _ = try await aggregator.catchUp()
        let counted = try #require(try await AggregateQueries(path: path, metrics: Self.table).registrations().first)
        #expect(counted.registrations == 202 && counted.distinctTokens == 202)
        #expect(counted["weekendRegistrations"] == 100, "each Saturday registration after the migration counted once: \(counted)")

        // An erasure takes a Saturday registration out of the metric, a Monday one only out of the totals.
        let (erasure, _) = try await aggregator.applyErasure([Self.target(10), Self.target(11)]) {}
        #expect(erasure.registrationsUncounted == 2 && erasure.tokensForgotten == 2)
        let erased = try #require(try await AggregateQueries(path: path, metrics: Self.table).registrations().first)
        #expect(erased.registrations == 200 && erased.distinctTokens == 200 && erased["weekendRegistrations"] == 99, "\(erased)")
        // The abandoned aggregator is never closed: as after a kill, it saves nothing more.
        await aggregator.close()
        await log.close()
        // With no aggregator running (`erase` without a server), the table given is the one uncounted.
        let offline = try await BlockingExecutor(name: "offline-erasure").run { () throws(AggregatorError) -> AggregateErasure? in
            try Aggregator.applyErasure([Self.target(12), Self.target(13)], dataDirectory: directory, table: Self.table)
        }
        #expect(offline?.registrationsUncounted == 2)
        let erasedOffline = try #require(try await AggregateQueries(path: path, metrics: Self.table).registrations().first)
        #expect(erasedOffline["weekendRegistrations"] == 98 && erasedOffline.registrations == 198, "\(erasedOffline)")

        // Listed by /v1/deliveries, beside the standard keys.
        let server = try await RunningServer.start { configuration in
            configuration.dataDirectory = directory
            configuration.aggregateMetrics = Self.table
        }
        let http = TestHTTPClient()
        let answer = try await http.get(server.url + "/v1/deliveries")
        #expect(answer.status == 200)
        #expect(
            answer.body.contains(#""integrationKey":"app","lastEvent":"#)
                && answer.body.contains(#""platform":"ios","registrations":198,"tenant":"default","weekendRegistrations":98}"#), "\(answer.body)")
        #expect(answer.body.contains(#""deliveryId":"d","firstEvent":"#) && answer.body.contains(#""opens":1,"tenant":"default","uniqueClicks":0"#))
        // And by the status report and page.
        let status = try await http.get(server.url + "/v1/status")
        #expect(status.body.contains(#""tenant":"default","weekendRegistrations":98}"#), "\(status.body)")
        let page = try await http.get(server.url + "/status").body
        #expect(page.contains(#"<th class="n">weekend registrations</th>"#) && page.contains(#"number(app.weekendRegistrations)"#))
        await server.stop()
        await http.shutdown()
    }
}

/// The same declared metric in PostgreSQL (``MetricDeclarationTests`` holds the table and the
/// events): in the thorough tier, with the other suites that start a PostgreSQL cluster.
@Suite("A metric is one declaration: the declared metric in PostgreSQL", .timeLimit(.minutes(5)), .tier(.thorough))
struct MetricDeclarationPostgresTests {
    typealias Declared = MetricDeclarationTests

    @Test("PostgreSQL: migrated onto an existing database, counted exactly once across an abandoned session, uncounted by an erasure, listed")
    func postgres() async throws {
        let postgres = try await TestPostgres.start()
        let directory = temporaryDirectory("metric-postgres")
        defer { removeTree(directory) }
        let log = try await Declared.log(directory)
        do {
            try await countIntoPostgres(at: try PostgresLocation(url: postgres.url), log: log)
        } catch {
            await log.close()
            await postgres.destroy()
            throw error
        }
        await log.close()
        await postgres.destroy()
    }

    func countIntoPostgres(at location: PostgresLocation, log: WriteAheadLog) async throws {
        // The database as the standard table makes it.
        try await location.connectedSession(timeout: Declared.patience, logger: quietLogger) { connection, watch in
            let aggregator = try await FleetAggregator(connection: connection, watch: watch, log: log, logger: quietLogger)
            _ = try await aggregator.catchUp()
            await aggregator.close()
        }
        let old = try #require(
            try await FleetQueries(location: location, timeout: Declared.patience, logger: quietLogger).report().registrations.first)
        #expect(old.registrations == 2 && old.values["weekendRegistrations"] == nil)

        _ = try await log.append(Declared.after)
        // Migrated, then abandoned mid-way: its session ends with the catch-up cut short.
        let stoppedAt = try await location.connectedSession(timeout: Declared.patience, logger: quietLogger) { connection, watch in
            let aggregator = try await FleetAggregator(
                connection: connection, watch: watch, log: log, batchSize: 7, metrics: Declared.table, logger: quietLogger)
            let ended = Ended()
            let catchingUp = Task {
                defer { ended.mark() }
                return try await aggregator.catchUp()
            }
            while await aggregator.nextSequence < 60, !ended.value { try await Task.sleep(for: .milliseconds(1)) }
            catchingUp.cancel()
            // A cancellation that meets a transaction under way rolls it back (a kill mid-batch).
            _ = try? await catchingUp.value
            return await aggregator.nextSequence
        }
        #expect(stoppedAt < 204, "the catch-up stopped before the end")
        let queries = FleetQueries(location: location, timeout: Declared.patience, metrics: Declared.table, logger: quietLogger)
        let migrated = try #require(try await queries.report().registrations.first)
        #expect(
            migrated["weekendRegistrations"] == Int64((stoppedAt - 4) / 2 + (stoppedAt - 4) % 2), "what the abandoned session committed: \(migrated)")
        let erasure = try await location.connectedSession(timeout: Declared.patience, logger: quietLogger) { connection, watch in
            let aggregator = try await FleetAggregator(
                connection: connection, watch: watch, log: log, batchSize: 7, metrics: Declared.table, logger: quietLogger)
            _ = try await aggregator.catchUp()
            let erasure = try await aggregator.applyErasure([Declared.target(10), Declared.target(11)])
            await aggregator.close()
            return erasure
        }
        #expect(erasure.registrationsUncounted == 2 && erasure.tokensForgotten == 2)
        let counted = try #require(try await queries.report().registrations.first)
        #expect(counted.registrations == 200 && counted.distinctTokens == 200 && counted["weekendRegistrations"] == 99, "\(counted)")
        // The fleet's report is what /v1/deliveries answers on a relay with --postgres-url.
        let text = APIJSON.text(try await queries.report())
        #expect(text.contains(#""registrations":200,"tenant":"default","weekendRegistrations":99}"#), "\(text)")
    }
}

/// Whether a task has ended, so that a wait for its progress stops when it fails instead.
private final class Ended: Sendable {
    private let ended = Mutex(false)
    var value: Bool { ended.withLock { $0 } }
    func mark() { ended.withLock { $0 = true } }
}

import Foundation
import RelayAggregator
import RelayCore
import RelayLog
import RelaySQLite
import RelayTestSupport
import TestTiers
import Testing

/// Counts per tenant (schema version 4): the same delivery id, app or token under two tenants is
/// counted apart, and a version 3 database written by the release before tenants migrates in place.
@Suite("Aggregator: counts per tenant, and the migration from version 3", .tier(.fast))
struct TenantCountsTests {
    static let time = EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000, fractionDigits: 3)
    static let brandA = try? TenantName(validating: "brand-a")
    static let brandB = try? TenantName(validating: "brand-b")

    static func hit(_ action: TrackingAction, _ id: Int64, delivery: String = "f0190", tenant: TenantName?) -> Event {
        var event = Event.tracking(TrackingEvent(action: action, messageId: MessageID(decimal: id), deliveryId: delivery, time: time))
        event.tenant = tenant
        return event
    }

    static func registration(_ token: String, tenant: TenantName?) -> Event {
        var event = Event.registration(Registration(platform: .android, integrationKey: "testIntegrationKey", registrationToken: token, time: time))
        event.tenant = tenant
        return event
    }

    @Test("the same delivery id, app and token under two tenants and the default are three of each, and each tenant reads alone")
    func tenantsCountApart() async throws {
        let directory = temporaryDirectory("tenant-counts")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        _ = try await log.append([
            Self.hit(.impression, 1, tenant: nil), Self.hit(.impression, 1, tenant: Self.brandA), Self.hit(.impression, 1, tenant: Self.brandA),
            Self.hit(.impression, 2, tenant: Self.brandA), Self.hit(.open, 1, tenant: Self.brandB), Self.hit(.click, 1, tenant: nil),
            Self.registration("t1", tenant: nil), Self.registration("t1", tenant: Self.brandA), Self.registration("t1", tenant: Self.brandA),
            Self.registration("t2", tenant: Self.brandA),
        ])
        _ = try await aggregator.catchUp()
        // A second batch: the rows of the first are found again by (tenant, id), not by id alone.
        _ = try await log.append([Self.hit(.impression, 1, tenant: Self.brandB), Self.hit(.impression, 3, tenant: nil)])
        _ = try await aggregator.catchUp()
        await aggregator.close()
        await log.close()

        let queries = try await AggregateQueries(path: Aggregator.databasePath(dataDirectory: directory))
        let all = try await queries.deliveries().sorted { $0.tenant < $1.tenant }
        #expect(all.map(\.tenant) == ["brand-a", "brand-b", "default"])
        #expect(all.map(\.deliveryId) == ["f0190", "f0190", "f0190"])
        #expect(all.map { [$0.impressions, $0.opens, $0.clicks] } == [[3, 0, 0], [1, 1, 0], [2, 0, 1]])
        #expect(all.map { [$0.uniqueImpressions, $0.uniqueOpens, $0.uniqueClicks] } == [[2, 0, 0], [1, 1, 0], [2, 0, 1]])
        let onlyA = try await queries.report(tenant: .only(Self.brandA))
        #expect(onlyA.deliveries.map(\.tenant) == ["brand-a"])
        #expect(onlyA.registrations.map { [$0.registrations, $0.distinctTokens] } == [[3, 2]])
        #expect(onlyA.registrations.map(\.tenant) == ["brand-a"])
        let onlyDefault = try await queries.report(tenant: .only(nil))
        #expect(onlyDefault.deliveries.map(\.impressions) == [2])
        #expect(onlyDefault.registrations.map { [$0.registrations, $0.distinctTokens] } == [[1, 1]])
        #expect(try await queries.report(tenant: .only(try TenantName(validating: "brand-c"))).deliveries.isEmpty)
        #expect(try await queries.registrations().count == 2)
        await queries.close()
    }

    /// `Fixtures/aggregates-v3.sqlite` was written by the release before tenants (`campaign-relay
    /// ingest examples/events.jsonl` then `aggregate`, commit bb3b82c), checkpointed into one file.
    static let versionThreeFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/aggregates-v3.sqlite")
        .path

    @Test(
        "a version 3 file of the release before tenants reads as the default tenant's, then migrates in place: the same rows and refs, nothing counted twice"
    )
    func versionThreeMigrates() async throws {
        let directory = temporaryDirectory("schema3")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = Aggregator.databasePath(dataDirectory: directory)
        try FileManager.default.copyItem(atPath: Self.versionThreeFile, toPath: path)
        #expect(try await DistinctMessagesTests.integer(path, "SELECT schema_version FROM aggregator_state") == 3)
        let refs = "SELECT group_concat(delivery_id || '=' || delivery_ref, ',') FROM (SELECT * FROM deliveries ORDER BY delivery_ref)"
        let refsBefore = try await DistinctMessagesTests.sql(path) { connection throws(SQLiteError) in
            let statement = try connection.prepare(refs)
            defer { statement.finalize() }
            _ = try statement.step()
            return statement.text(0) ?? ""
        }
        let old = try await AggregateQueries(path: path)
        let before = try await old.report()
        await old.close()
        // What examples/events.jsonl counts to.
        #expect(before.sequences == 1..<10)
        let byId = Dictionary(uniqueKeysWithValues: before.deliveries.map { ($0.deliveryId, $0) })
        #expect(before.deliveries.map(\.tenant) == ["default", "default"])
        #expect(
            byId["f0190"].map { [$0.impressions, $0.opens, $0.clicks, $0.uniqueImpressions, $0.uniqueOpens, $0.uniqueClicks] } == [1, 2, 1, 1, 2, 1])
        #expect(byId["f01a3"].map { [$0.impressions, $0.uniqueImpressions] } == [2, 2])
        #expect(
            before.registrations.map { "\($0.tenant) \($0.platform) \($0.registrations) \($0.distinctTokens)" }.sorted() == [
                "default android 1 1", "default ios 2 2",
            ])

        // A log at the same place (nine events), then the aggregator of this release opens the file.
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
        _ = try await log.append((1...9).map { Self.hit(.impression, 9_000 + $0, delivery: "filler", tenant: nil) })
        let aggregator = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
        #expect(try await DistinctMessagesTests.integer(path, "SELECT schema_version FROM aggregator_state") == 5)
        #expect(try await DistinctMessagesTests.integer(path, "SELECT count(*) FROM deliveries WHERE tenant = ''") == 2)
        // Version 5 keeps no token in the clear: the three tokens counted before are digests now.
        #expect(
            try await DistinctMessagesTests.integer(
                path, "SELECT count(*) FROM registration_tokens WHERE length(registration_token) = 64 AND registration_token NOT GLOB '*[^0-9a-f]*'")
                == 3)
        #expect(try await DistinctMessagesTests.integer(path, "SELECT count(*) FROM registration_tokens WHERE registration_token = 'testToken'") == 0)
        let refsAfter = try await DistinctMessagesTests.sql(path) { connection throws(SQLiteError) in
            let statement = try connection.prepare(refs)
            defer { statement.finalize() }
            _ = try statement.step()
            return statement.text(0) ?? ""
        }
        #expect(refsAfter == refsBefore, "delivery_ref values are kept, so the distinct messages keyed by them still belong to their delivery")
        let migrated = try await AggregateQueries(path: path)
        let after = try await migrated.report()
        await migrated.close()
        #expect(after.deliveries == before.deliveries)
        #expect(after.registrations == before.registrations)

        // Repeats of migrated messages and tokens are not new; the same under a tenant are.
        _ = try await log.append([
            Self.hit(.impression, 55_336, tenant: nil), Self.hit(.impression, 55_336, tenant: Self.brandA),
            Self.registration("testToken", tenant: nil), Self.registration("testToken", tenant: Self.brandA),
        ])
        _ = try await aggregator.catchUp()
        await aggregator.close()
        await log.close()
        let queries = try await AggregateQueries(path: path)
        let f0190 = try await queries.deliveries(deliveryId: "f0190").sorted { $0.tenant < $1.tenant }
        #expect(f0190.map { "\($0.tenant) \($0.impressions) \($0.uniqueImpressions)" } == ["brand-a 1 1", "default 2 1"])
        let android = try await queries.registrations().filter { $0.platform == .android }.sorted { $0.tenant < $1.tenant }
        #expect(android.map { "\($0.tenant) \($0.registrations) \($0.distinctTokens)" } == ["brand-a 1 1", "default 2 1"])
        await queries.close()
    }
}

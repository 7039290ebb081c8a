import Foundation
import RelayCore
import RelayForwarding
import RelayLog
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayPostgres

/// Dead letters on the log in PostgreSQL (`relay_dead_letters`): a ``ForwardingStore`` on a
/// ``PostgresDeadLetters`` table keeps its letters there, sealed, under its stream, and sees only
/// that stream's; a lane stores one only under the lease of the stream its event came from.
@Suite("Dead letters kept in PostgreSQL", .serialized, .timeLimit(.minutes(5)), .tier(.fast))
struct PostgresDeadLettersTests {
    static let oldKeys = LogKeyRing(keys: [.init(id: "k1", bytes: TestKeys.bytes("pg-dead-letters-k1"))])
    static let newKeys = LogKeyRing(keys: oldKeys.keys + [.init(id: "k2", bytes: TestKeys.bytes("pg-dead-letters-k2"))])

    /// A store on stream `stream` of `postgres`, its file in a directory of its own.
    static func store(_ stream: String, _ postgres: TestPostgres, keys: LogKeyRing?, fence: StreamLeaseFence? = nil) async throws -> ForwardingStore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-dead-letters-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let table = PostgresDeadLetters(location: try PostgresLocation(url: postgres.url), stream: stream, fence: fence)
        return try await ForwardingStore(dataDirectory: directory, keys: keys, table: table)
    }

    /// Rejects `token`'s registration as sequence `sequence`.
    static func reject(_ token: String, sequence: UInt64, tenant: String? = nil, into store: ForwardingStore, stream: String? = nil) async throws {
        try await store.deadLetter(
            sequence: sequence, event: .registration(try ErasureBench.registration(token, user: "\(token)-user", tenant: tenant)),
            url: "https://campaign.example/nms/mobile/1/registerAndroid.jssp", status: 400, body: "UnknownUUID \(token)",
            reason: "Campaign refused it (400)", stream: stream)
    }

    @Test(
        "a store on the table keeps its letters sealed under its stream: listed by tenant and limit, counted, re-queued, erased and sealed anew with the newest key, never another stream's"
    )
    func lettersPerStream() async throws {
        let postgres = try await TestPostgres.start()
        func sql(_ query: String) async throws -> String { try await postgres.psql(query).trimmingCharacters(in: .whitespacesAndNewlines) }
        let a = try await Self.store("relay-a", postgres, keys: Self.oldKeys)
        let b = try await Self.store("relay-b", postgres, keys: Self.oldKeys)
        try await Self.reject("pdtoka1", sequence: 7, into: a)
        try await Self.reject("pdtoka2", sequence: 8, tenant: "brand-a", into: a)
        try await Self.reject("pdtoka3", sequence: 9, into: a)
        try await Self.reject("pdtokb1", sequence: 20, into: b)

        let letters = try await a.deadLetters()
        #expect(letters.map(\.sequence) == [7, 8, 9])
        #expect(letters.map(\.tenant) == ["default", "brand-a", "default"])
        #expect(letters.allSatisfy { $0.status == 400 && $0.reason == "Campaign refused it (400)" && $0.url.hasSuffix("registerAndroid.jssp") })
        #expect(letters[1].eventJSON.contains(#""registrationToken":"pdtoka2""#) && letters[1].responseBody == "UnknownUUID pdtoka2")
        #expect(try await a.deadLetters(tenant: .only(try TenantName(validating: "brand-a"))).map(\.sequence) == [8])
        #expect(try await a.deadLetters(tenant: .only(nil)).map(\.sequence) == [7, 9])
        #expect(try await a.deadLetters(limit: 2).map(\.sequence) == [7, 8])
        #expect(try await a.pendingDeadLetterCountsByTenant() == ["": 2, "brand-a": 1])
        #expect(try await b.deadLetters().map(\.sequence) == [20])
        // Sealed in the table: no token, URL or answer in the clear.
        #expect(try await sql("SELECT count(*) FROM relay_dead_letters") == "4")
        #expect(try await sql("SELECT count(*) FROM relay_dead_letters WHERE event_json || url || response_body LIKE '%pdtok%'") == "0")

        // Re-queued: only a letter of its own stream.
        do {
            try await a.markRequeued(id: try #require(try await b.deadLetters().first).id, sequence: 99)
            Issue.record("relay-a marked relay-b's letter re-queued")
        } catch {
            guard case .noSuchLetter? = error as? ForwardingStoreError else { throw error }
        }
        try await a.markRequeued(id: letters[2].id, sequence: 41)
        #expect(try await a.pendingDeadLetterCount() == 2)
        #expect(try await a.deadLetters(includeRequeued: true).last?.requeued?.sequence == 41)
        #expect(try await b.pendingDeadLetterCount() == 1)

        // An erasure finds and deletes this stream's letters of the person alone.
        let findings = try await a.erasureFindings(ErasureSelector(.registrationToken("pdtoka1")), tokenDigests: [])
        #expect(findings.deadLetteredSequences == [7])
        let erased = try await a.erase(deadLetterIDs: findings.deadLetterIDs + [try #require(try await b.deadLetters().first).id], tokenDigests: [])
        #expect(erased.deadLetters == 1, "relay-b's letter is not relay-a's to delete")
        #expect(try await a.deadLetters(includeRequeued: true).map(\.sequence) == [8, 9])
        #expect(try await b.deadLetters().map(\.sequence) == [20])

        // wal rekey: this stream's letters sealed with the newest key, relay-b's left as they were.
        let rekeyed = try await Self.store("relay-a", postgres, keys: Self.newKeys)
        #expect(try await rekeyed.resealDeadLetters().letters == 2)
        #expect(try await rekeyed.resealDeadLetters().letters == 0, "already under the newest key")
        let keyIDs = try await sql("SELECT stream || ' ' || left(response_body, 10) FROM relay_dead_letters ORDER BY id")
        #expect(SealedText.keyID(of: (try await sql("SELECT event_json FROM relay_dead_letters WHERE sequence = 8"))) == "k2")
        #expect(SealedText.keyID(of: (try await sql("SELECT url FROM relay_dead_letters WHERE sequence = 9"))) == "k2")
        #expect(
            SealedText.keyID(of: (try await sql("SELECT response_body FROM relay_dead_letters WHERE sequence = 20"))) == "k1", "\(keyIDs)"
        )
        #expect(try await rekeyed.deadLetters(includeRequeued: true).map(\.responseBody) == ["UnknownUUID pdtoka2", "UnknownUUID pdtoka3"])
        await postgres.destroy()
    }

    @Test(
        "a serving relay's store keeps a letter of an adopted stream under that stream, and only while it holds that stream's lease with the token granted"
    )
    func lettersUnderTheLease() async throws {
        let postgres = try await TestPostgres.start()
        func sql(_ query: String) async throws -> String { try await postgres.psql(query).trimmingCharacters(in: .whitespacesAndNewlines) }
        let fence = StreamLeaseFence()
        let own = try await Self.store("relay-own", postgres, keys: nil, fence: fence)
        #expect(try await own.pendingDeadLetterCount() == 0)

        do {
            try await Self.reject("pdtokc1", sequence: 3, into: own, stream: "relay-gone")
            Issue.record("stored without the lease")
        } catch {
            #expect("\(error)".contains("does not hold the stream's lease now"), "\(error)")
        }
        _ = try await sql(
            "INSERT INTO relay_log_leases (stream, holder, token, expires_at) VALUES ('relay-gone', 'relay-own:1', 5, now() + interval '1 hour')")
        fence.granted("relay-gone", holder: "relay-own:1", token: 5, sentAt: .now, lease: .seconds(60))
        try await Self.reject("pdtokc2", sequence: 4, into: own, stream: "relay-gone")
        #expect(try await sql("SELECT stream || ':' || sequence FROM relay_dead_letters") == "relay-gone:4")
        #expect(try await own.pendingDeadLetterCount() == 0, "the adopted stream's letter is not the relay's own")
        let gone = try await Self.store("relay-gone", postgres, keys: nil)
        #expect(try await gone.deadLetters().map(\.sequence) == [4])

        // Another relay took the lease (a new token) while this one was frozen: nothing is stored.
        _ = try await sql("UPDATE relay_log_leases SET holder = 'relay-other:1', token = 6 WHERE stream = 'relay-gone'")
        do {
            try await Self.reject("pdtokc3", sequence: 5, into: own, stream: "relay-gone")
            Issue.record("stored under a lease taken over")
        } catch {
            #expect("\(error)".contains("does not hold the stream's lease now"), "\(error)")
        }
        #expect(try await sql("SELECT count(*) FROM relay_dead_letters") == "1")
        await postgres.destroy()
    }
}

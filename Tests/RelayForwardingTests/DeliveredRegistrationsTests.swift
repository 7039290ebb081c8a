import Foundation
import RelayCore
import RelayIO
import RelayLog
import RelaySQLite
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayForwarding

/// The forwarding store remembers delivered registrations by digests, and a store written before
/// that is migrated in place: its tokens and fingerprints become digests, and what was delivered
/// still counts as delivered.
@Suite("Delivered registrations kept as digests", .tier(.fast))
struct DeliveredRegistrationsTests {
    static func registration(_ token: String, user: String) throws -> Registration {
        Registration(
            platform: .android, integrationKey: "app", registrationToken: token, userKey: user, additionalParams: [],
            time: try EventTime(rfc3339: "2026-11-26T10:00:00Z", field: "time"))
    }

    @Test("a store of the release before (tokens in the clear) is migrated: no token left, the delivered one still unchanged")
    func migration() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("delivered-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = ForwardingStore.path(dataDirectory: directory)
        let delivered = try Self.registration("ddtoken1", user: "dduser1")
        let now = EventTime.now().rfc3339
        // The table as the release before wrote it: the token and the fingerprint in the clear.
        try await BlockingExecutor(name: "old-store").run { () throws(SQLiteError) in
            let connection = try SQLiteConnection(path: path, walWithSynchronous: .full)
            defer { connection.close() }
            try connection.execute(
                """
                CREATE TABLE delivered_registrations (tenant TEXT NOT NULL DEFAULT '', platform TEXT NOT NULL, integration_key TEXT NOT NULL,
                    registration_token TEXT NOT NULL, fingerprint TEXT NOT NULL, delivered_at TEXT NOT NULL,
                    PRIMARY KEY (tenant, platform, integration_key, registration_token)) WITHOUT ROWID;
                INSERT INTO delivered_registrations VALUES ('', 'android', 'app', 'ddtoken1', 'dduser1' || char(31) || '<additionalParameters></additionalParameters>', '\(now)');
                """)
        }
        let store = try await ForwardingStore(dataDirectory: directory)
        #expect(try await store.isUnchanged(delivered, within: .seconds(3600)))
        #expect(try await !store.isUnchanged(try Self.registration("ddtoken1", user: "dduser2"), within: .seconds(3600)))
        #expect(try await !store.isUnchanged(try Self.registration("ddtoken2", user: "dduser1"), within: .seconds(3600)))
        let bytes = try String(decoding: Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        let journal = (try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))).map { String(decoding: $0, as: UTF8.self) } ?? ""
        #expect(!bytes.contains("ddtoken1") && !bytes.contains("dduser1"), "the store still holds a token or user key in the clear")
        #expect(!journal.contains("ddtoken1") && !journal.contains("dduser1"), "the journal still holds a token or user key in the clear")
    }
}

import Foundation
import RelayCore
import RelayForwarding
import RelayLog
import RelayPostgres
import RelayPrivacy
import RelayServer
import RelayTestSupport
import TestTiers
import Testing

/// The promises of `docs/privacy.md` about what an erasure reaches, each checked on
/// ``PersonalDataErasure`` in this process against real files: the deduplication rows of every
/// tenant and app, `forwarding.sqlite` and its journal, every tenant's registrations and only the
/// app's with an integration key, and the selector's keyed hash. Expected digests and hashes are
/// computed outside the project (`sha256sum`, Python's `hmac`).
@Suite("Erasing a person, in process", .tier(.fast))
struct PersonalDataErasureTests {
    static let hour = Duration.seconds(3600)

    @Test("her token's deduplication rows go for every tenant and app, also those the log holds no registration of; another token's stay")
    func deduplicationRowsOfEveryTenantAndApp() async throws {
        let bench = try await ErasureBench.open("erasure-dedup")
        defer { Task { await bench.close() } }
        let inDefault = try ErasureBench.registration("pdtokA", user: "pdcanaryadauser")
        let inBrandA = try ErasureBench.registration("pdtokA", user: "pdcanaryadauser", tenant: "brand-a", app: "app2")
        let others = try ErasureBench.registration("pdtokB", user: "pdcanarybobuser")
        try await bench.append([inDefault, others])
        for registration in [inDefault, inBrandA, others] { try await bench.store.recordDelivered(registration) }
        for registration in [inDefault, inBrandA, others] { #expect(try await bench.store.isUnchanged(registration, within: Self.hour)) }

        let report = try await bench.erasure().erase(ErasureSelector(.registrationToken("pdtokA")), dryRun: false)
        #expect(report.registrations == 1)
        #expect(report.deduplicationRecords == 2, "\(report)")
        #expect(try await !bench.store.isUnchanged(inDefault, within: Self.hour), "the default tenant's row of her token is gone")
        #expect(try await !bench.store.isUnchanged(inBrandA, within: Self.hour), "brand-a's row of her token, of another app, is gone")
        #expect(try await bench.store.isUnchanged(others, within: Self.hour), "another token's row stays")
    }

    @Test("forwarding.sqlite keeps nothing of her: her dead letter and deduplication row deleted with secure_delete, the journal emptied")
    func forwardingStoreKeepsNothing() async throws {
        let bench = try await ErasureBench.open("erasure-secure-delete")
        defer { Task { await bench.close() } }
        // This machine's SQLite may zero deleted content by default (SQLITE_SECURE_DELETE): the
        // store's connection is set to keep it, so only the erasure's own pragma zeroes it.
        #expect(try await bench.store.pragmaForTest("PRAGMA secure_delete = OFF") == 0)
        let hers = try ErasureBench.ada("pdtokA")
        let others = try ErasureBench.registration("pdtokB", user: "pdcanarybobuser")
        let sequences = try await bench.append([hers, others])
        try await bench.store.deadLetter(
            sequence: sequences[0], event: .registration(hers), url: "https://campaign.example/nms/mobile/1/registerAndroid.jssp", status: 400,
            body: "refused", reason: "Campaign refused it")
        try await bench.store.recordDelivered(hers)
        try await bench.store.recordDelivered(others)
        // printf %s pdtokA | sha256sum
        let herDigest = "dbcf997597b8cdc61883e06771785a8d1246741ea81642bcd38d16b20c06a478"
        let path = ForwardingStore.path(dataDirectory: bench.directory)
        let before = Self.contents(path) + Self.contents(path + "-wal")
        #expect(before.contains(utf8: "pdcanaryadauser") && before.contains(utf8: herDigest), "the check would see her")

        let report = try await bench.erasure().erase(ErasureSelector(.userKey("pdcanaryadauser")), dryRun: false)
        #expect(report.deadLetters == 1 && report.deduplicationRecords == 1, "\(report)")
        let database = Self.contents(path)
        let journal = Self.contents(path + "-wal")
        #expect(!database.contains(utf8: "pdcanaryadauser") && !database.contains(utf8: herDigest), "forwarding.sqlite still holds her")
        #expect(!journal.contains(utf8: "pdcanaryadauser") && !journal.contains(utf8: herDigest), "forwarding.sqlite-wal still holds her")
        #expect(journal.count == 0, "the journal is truncated")
        #expect(try await bench.store.isUnchanged(others, within: Self.hour))
    }

    /// The bytes of `path`; none when it does not exist.
    static func contents(_ path: String) -> [UInt8] { FileManager.default.contents(atPath: path).map(Array.init) ?? [] }

    @Test("every tenant's registrations are hers; --integration-key narrows to that app's, and a second erasure takes the rest")
    func everyTenantAndIntegrationKey() async throws {
        let bench = try await ErasureBench.open("erasure-tenants")
        defer { Task { await bench.close() } }
        let registrations = [
            try ErasureBench.ada("pdtok1"), try ErasureBench.ada("pdtok2", tenant: "brand-a"),
            try ErasureBench.ada("pdtok3", tenant: "brand-a", app: "app2"),
            try ErasureBench.registration("pdtok4", user: "pdcanarybobuser", tenant: "brand-a"),
        ]
        let sequences = try await bench.append(registrations)
        let original = try bench.stored()

        let narrowed = try await bench.erasure().erase(ErasureSelector(.userKey("pdcanaryadauser"), integrationKey: "app1"), dryRun: false)
        #expect(narrowed.registrations == 2, "app1's, in the default tenant and brand-a: \(narrowed)")
        #expect(narrowed.rewrites.first?.entriesErased == 2)
        var stored = try bench.stored()
        #expect(Self.isErased(stored[sequences[0]]) && Self.isErased(stored[sequences[1]]))
        #expect(stored[sequences[2]] == original[sequences[2]], "app2's stays")
        #expect(stored[sequences[3]] == original[sequences[3]], "Bob's stays")

        let rest = try await bench.erasure().erase(ErasureSelector(.userKey("pdcanaryadauser")), dryRun: false)
        #expect(rest.registrations == 1, "brand-a's app2 registration: \(rest)")
        stored = try bench.stored()
        #expect(sequences[0..<3].allSatisfy { Self.isErased(stored[$0]) })
        #expect(stored[sequences[3]] == original[sequences[3]])
    }

    static func isErased(_ event: Event?) -> Bool { if case .erased? = event { true } else { false } }

    @Test(
        "the selector's keyed hash: HMAC-SHA256 of kind, value and integration key under pseudonym.key; the plan and the audit hold it, never the value"
    )
    func selectorHash() async throws {
        // The key: bytes 0 to 31. Expected values from Python:
        // hmac.new(bytes(range(32)), "user-key\x1fada@example.com\x1f".encode(), hashlib.sha256).hexdigest()[:12]
        let bench = try await ErasureBench.open("erasure-hash") { directory in
            #expect(FileManager.default.createFile(atPath: directory + "/pseudonym.key", contents: Data((0..<32).map { UInt8($0) })))
        }
        defer { Task { await bench.close() } }
        try await bench.append([try ErasureBench.registration("pdtokE", user: "ada@example.com")])
        let expected: [(ErasureSelector, String, String)] = [
            (ErasureSelector(.userKey("ada@example.com")), "user-key", "hash:a2f519c816ff"),
            (ErasureSelector(.registrationToken("ada@example.com")), "registration-token", "hash:72c63769955b"),
            (ErasureSelector(.userKey("ada@example.com"), integrationKey: "app1"), "user-key", "hash:ae7ec26d883c"),
        ]
        for (selector, kind, hash) in expected {
            let dry = try await bench.erasure().erase(selector, dryRun: true)
            #expect(dry.selector.kind == kind && dry.selector.hash == hash, "\(selector): \(dry.selector)")
        }

        // The erasure stops after its plan (the fleet does not answer): the plan is read as written.
        await #expect(throws: ErasureError.self) {
            _ = try await bench.erasure(fleet: { _ in throw FleetDown() }).erase(ErasureSelector(.userKey("ada@example.com")), dryRun: false)
        }
        let planFiles = try PosixFileSystem().listDirectory(bench.walDirectory).filter { $0.hasSuffix(".plan") }
        #expect(planFiles.count == 1)
        let plan = try PosixFileSystem().readFile(bench.walDirectory + "/" + (planFiles.first ?? ""))
        #expect(plan.contains(utf8: #""selectorHash":"hash:a2f519c816ff""#) && plan.contains(utf8: #""selectorKind":"user-key""#))
        #expect(!plan.contains(utf8: "ada@example") && !plan.contains(utf8: "pdtokE"), "the plan holds the value")

        let finished = try await bench.erasure(fleet: { _ in FleetErasure.Result() }).finishPending()
        #expect(finished.map(\.selector.hash) == ["hash:a2f519c816ff"])
        let audit = Self.contents(ErasureAuditLog.path(dataDirectory: bench.directory))
        #expect(audit.contains(utf8: #""hash":"hash:a2f519c816ff""#) && audit.contains(utf8: #""kind":"user-key""#))
        #expect(!audit.contains(utf8: "ada@example") && !audit.contains(utf8: "pdtokE"), "the audit log holds the value")
    }
}

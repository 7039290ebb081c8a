import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// `campaign-relay erase` on the real binary: a person's registrations leave the log, the counts
/// and every file, everyone else's stay exactly as they were, the uploader never sends what was
/// erased, and a `kill -9` at any moment leaves the old state or the new one, finished by the next run.
@Suite("Erasing a person", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct ErasureCommandTests {
    /// Three people; Ada twice (two devices, each registration with a time of its own), with her
    /// canaries in every personal field.
    static let events = [
        #"{"kind":"register","platform":"android","integrationKey":"app","registrationToken":"pdcanaryadatoken1","userKey":"pdcanaryadauser","deviceName":"pdcanaryadadevice","additionalParams":{"k":"pdcanaryadaparam"},"time":"2026-03-02T08:11:40.512Z"}"#,
        #"{"kind":"track","action":"impression","messageId":"55336","deliveryId":"d1"}"#,
        #"{"kind":"register","platform":"android","integrationKey":"app","registrationToken":"pdcanarybobtoken","userKey":"pdcanarybobuser"}"#,
        #"{"kind":"track","action":"open","messageId":"55337","deliveryId":"d1"}"#,
        #"{"kind":"register","platform":"ios","integrationKey":"app","registrationToken":"pdcanaryadatoken2","userKey":"pdcanaryadauser","deviceName":"pdcanaryadaphone","time":"2026-03-13T19:03:22.007Z"}"#,
        #"{"kind":"register","platform":"ios","integrationKey":"app","registrationToken":"pdcanarycaratoken","userKey":"pdcanarycarauser"}"#,
    ]

    /// A data directory holding ``events`` in uncompressed frames (a byte of a registration left
    /// anywhere shows), counted. `ingestOptions` are added to `ingest`'s (`--segment-bytes`), and
    /// `between` events are stored after the first four.
    static func prepared(_ label: String, ingestOptions: [String] = [], between: [String] = []) async throws -> String {
        let binary = try RelayBinary.path()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("erase-\(label)-\(UUID().uuidString)").path
        let input = Data(((events[..<4] + between + events[4...]).joined(separator: "\n") + "\n").utf8)
        let ingested = try await RelayBinary.run(
            binary, ["ingest", "--data-dir", directory, "--compression-level", "0"] + ingestOptions + ["-"], input: input)
        #expect(ingested.status == 0, "\(ingested.stderr)")
        let counted = try await RelayBinary.run(binary, ["aggregate", "--data-dir", directory])
        #expect(counted.status == 0, "\(counted.stderr)")
        return directory
    }

    /// `wal dump`'s lines without their times.
    static func dump(_ directory: String) async throws -> [String] {
        try await rawDump(directory).map { $0.replacing(/,"time":"[^"]*"/, with: "") }
    }

    /// `wal dump`'s lines as it prints them.
    static func rawDump(_ directory: String) async throws -> [String] {
        let dumped = try await RelayBinary.run(try RelayBinary.path(), ["wal", "dump", "--data-dir", directory])
        #expect(dumped.status == 0, "\(dumped.stderr)")
        return dumped.stdout.split(separator: "\n").map(String.init)
    }

    /// The registrations per app as `stats --json --no-catch-up` shows them: platform → (registrations, distinct tokens).
    static func registrations(_ directory: String) async throws -> [String: [Int]] {
        let stats = try await RelayBinary.run(try RelayBinary.path(), ["stats", "--data-dir", directory, "--json", "--no-catch-up"])
        #expect(stats.status == 0, "\(stats.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any]
        var result: [String: [Int]] = [:]
        for row in object?["registrations"] as? [[String: Any]] ?? [] {
            result[row["platform"] as? String ?? ""] = [row["registrations"] as? Int ?? -1, row["distinctTokens"] as? Int ?? -1]
        }
        return result
    }

    /// The erasure records of `erase --list --json`.
    static func records(_ directory: String) async throws -> [[String: Any]] {
        let listed = try await RelayBinary.run(try RelayBinary.path(), ["erase", "--data-dir", directory, "--list", "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any]
        return object?["erasures"] as? [[String: Any]] ?? []
    }

    static let untouched = [
        #"{"seq":1,"kind":"register","platform":"android","integrationKey":"app","registrationToken":"pdcanaryadatoken1","userKey":"pdcanaryadauser","deviceName":"pdcanaryadadevice","additionalParams":{"k":"pdcanaryadaparam"}}"#,
        #"{"seq":2,"kind":"track","action":"impression","messageId":"55336","deliveryId":"d1"}"#,
        #"{"seq":3,"kind":"register","platform":"android","integrationKey":"app","registrationToken":"pdcanarybobtoken","userKey":"pdcanarybobuser"}"#,
        #"{"seq":4,"kind":"track","action":"open","messageId":"55337","deliveryId":"d1"}"#,
        #"{"seq":5,"kind":"register","platform":"ios","integrationKey":"app","registrationToken":"pdcanaryadatoken2","userKey":"pdcanaryadauser","deviceName":"pdcanaryadaphone"}"#,
        #"{"seq":6,"kind":"register","platform":"ios","integrationKey":"app","registrationToken":"pdcanarycaratoken","userKey":"pdcanarycarauser"}"#,
    ]
    static let erased = [
        #"{"seq":1,"kind":"erased"}"#, untouched[1], untouched[2], untouched[3], #"{"seq":5,"kind":"erased"}"#, untouched[5],
    ]

    /// Ada's canaries found in any file of `directory`.
    static func adaCanaries(_ directory: String) -> [String: Set<String>] {
        PersonalDataAtRestTests.canaries(under: directory).compactMapValues { hits in
            let ada = hits.filter { $0.hasPrefix("pdcanaryada") }
            return ada.isEmpty ? nil : ada
        }
    }

    @Test("erase --user-key: her two registrations become erased entries, counts drop by two, no file holds her, upload never sends her")
    func eraseWithoutServer() async throws {
        let binary = try RelayBinary.path()
        let directory = try await Self.prepared("offline")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try await Self.dump(directory) == Self.untouched)
        let times = try await Self.rawDump(directory).map { $0.firstMatch(of: /"time":"([^"]*)"/).map { String($0.1) } }
        #expect(times[0] == "2026-03-02T08:11:40.512Z" && times[4] == "2026-03-13T19:03:22.007Z", "her registrations' own times: \(times)")
        #expect(try await Self.registrations(directory) == ["android": [2, 2], "ios": [2, 2]])

        let dry = try await RelayBinary.run(binary, ["erase", "--data-dir", directory, "--user-key", "pdcanaryadauser", "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains(#""registrations":2"#) && dry.stdout.contains(#""dryRun":true"#))
        #expect(try await Self.dump(directory) == Self.untouched, "a dry run changes nothing")

        let erased = try await RelayBinary.run(binary, ["erase", "--data-dir", directory, "--user-key", "pdcanaryadauser", "--json"])
        #expect(erased.status == 0, "\(erased.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(erased.stdout.utf8)) as? [String: Any])
        #expect(report["registrations"] as? Int == 2)
        #expect(report["notYetForwarded"] as? Int == 2)
        #expect((report["rewrites"] as? [[String: Any]])?.first?["entriesErased"] as? Int == 2)
        let aggregates = try #require(report["aggregates"] as? [String: Any])
        #expect(aggregates["registrationsUncounted"] as? Int == 2 && aggregates["tokensForgotten"] as? Int == 2)
        #expect(!erased.stdout.contains("pdcanary") && !erased.stderr.contains("pdcanary"), "the answer and the log lines hold no personal data")

        #expect(try await Self.dump(directory) == Self.erased)
        // An erased entry keeps the registration's time, to the millisecond as it was given.
        let raw = try await Self.rawDump(directory)
        #expect(raw.first == #"{"seq":1,"kind":"erased","time":"2026-03-02T08:11:40.512Z"}"#, "\(raw)")
        #expect(raw.count == 6 && raw[4] == #"{"seq":5,"kind":"erased","time":"2026-03-13T19:03:22.007Z"}"#, "\(raw)")
        #expect(try await Self.registrations(directory) == ["android": [1, 1], "ios": [1, 1]])
        #expect(Self.adaCanaries(directory).isEmpty, "\(Self.adaCanaries(directory))")
        // Bob's bytes are where they were: the scan would have seen Ada's.
        #expect(PersonalDataAtRestTests.canaries(under: directory).values.contains { $0.contains("pdcanarybobtoken") })

        // A rebuild from the log counts what the erasure left.
        let rebuilt = try await RelayBinary.run(binary, ["stats", "--data-dir", directory, "--rebuild", "--json"])
        #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
        #expect(try await Self.registrations(directory) == ["android": [1, 1], "ios": [1, 1]])

        // Campaign gets Bob and Cara, never Ada.
        let campaign = try await RunningEmulator.start()
        let uploaded = try await RelayBinary.run(
            binary, ["upload", "--data-dir", directory, "--tracking-host", campaign.url, "--marketing-host", campaign.url, "--until-drained"])
        #expect(uploaded.status == 0, "\(uploaded.stderr)")
        let tokens = await campaign.emulator.recorder.acceptedRegistrations.compactMap { $0["registrationToken"] }.sorted()
        #expect(tokens == ["pdcanarybobtoken", "pdcanarycaratoken"])

        // Again: nothing left to erase; both recorded.
        let again = try await RelayBinary.run(binary, ["erase", "--data-dir", directory, "--user-key", "pdcanaryadauser", "--json"])
        #expect(again.status == 0 && again.stdout.contains(#""registrations":0"#), "\(again.stdout) \(again.stderr)")
        #expect(try await Self.records(directory).map { $0["registrations"] as? Int } == [2, 0])
    }
}

/// `erase` beside a running `serve`: handed to the server, which erases from its log (the active
/// segment sealed first), its archive, its dead letters and its counts while it takes and forwards
/// events, and never sends a registration its uploader had read and was retrying.
@Suite("Erasing a person beside a running server", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct ErasureBesideServeTests {
    static let token = "erasure-admin-token-0123456789"

    static func registration(_ person: String, _ number: Int, key: String = "app") -> String {
        #"{"kind":"register","platform":"ios","integrationKey":"\#(key)","registrationToken":"pdcanary\#(person)token\#(number)","userKey":"pdcanary\#(person)user","deviceName":"pdcanary\#(person)device\#(number)"}"#
    }

    static func hits(_ range: ClosedRange<Int>) -> [String] {
        range.map { #"{"kind":"track","action":"impression","messageId":"\#($0)","deliveryId":"d1"}"# }
    }

    @Test("encrypted log, archive, dead letter, a delivered and an in-flight registration: erased everywhere; Campaign never gets the in-flight one")
    func eraseBesideServe() async throws {
        let binary = try RelayBinary.path()
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["app"]
        let campaign = try await RunningEmulator.start(faults: faults)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("erase-serve-\(UUID().uuidString)").path
        let archive = directory + "-archive"
        let keys = try PersonalDataAtRestTests.keyFile(in: directory)
        defer {
            for path in [directory, archive, keys] { try? FileManager.default.removeItem(atPath: path) }
        }
        try FileManager.default.createDirectory(atPath: archive, withIntermediateDirectories: true)
        let server = try ChildProcess(
            binary,
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-format", "json", "--encryption-key-file", keys,
                "--compression-level", "0",
                "--segment-bytes", "4096", "--retain", "0", "--archive-dir", archive, "--tracking-host", campaign.url, "--marketing-host",
                campaign.url, "--admin-token", Self.token,
            ]
        )
        defer { server.stopWithoutWaiting() }
        let url = "http://127.0.0.1:\(try await server.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        let http = TestHTTPClient()
        let admin = [("Authorization", "Bearer \(Self.token)")]
        let json = [("Content-Type", "application/json")]
        func post(_ events: [String]) async throws {
            #expect(try await http.post(url + "/v1/events", "[" + events.joined(separator: ",") + "]", headers: json).status == 200)
        }

        // Hers: one Campaign refuses (a dead letter), one it takes; hits enough to roll segments into the archive.
        try await post([Self.registration("ada", 0, key: "stranger"), Self.registration("ada", 1)] + Self.hits(1...150))
        // Each request is a commit; a segment rolls at the first commit that does not fit.
        for batch in 1...4 { try await post(Self.hits((batch * 1000)...(batch * 1000 + 150))) }
        try await waitUntil("her dead letter, her delivered registration, a segment archived", seconds: 240) {
            let accepted = await campaign.emulator.recorder.acceptedRegistrations.count
            let letters = try await http.get(url + "/v1/deadletters", headers: admin).body
            let archived = (try? FileManager.default.contentsOfDirectory(atPath: archive))?.contains { $0.hasSuffix(".wal") } ?? false
            return accepted == 1 && letters.components(separatedBy: #""id":"#).count - 1 == 1 && archived
        }
        // Campaign goes down, asking for a retry in a second: her next registration is read and
        // retried, the breaker open between tries, each of which is its probe.
        var down = campaign.emulator.currentFaults
        down.failureRate = 1
        down.failureStatus = 503
        down.retryAfterSeconds = 1
        campaign.emulator.currentFaults = down
        let before = await campaign.emulator.recorder.receivedRequests
        try await post([Self.registration("ada", 2)] + Self.hits(151...160))
        try await waitUntil("the uploader trying her registration against a Campaign that fails", seconds: 240) {
            let received = await campaign.emulator.recorder.receivedRequests
            let tried = await campaign.emulator.recorder.lastRequests(50).contains { $0.body.contains("pdcanaryadatoken2") && $0.status == 503 }
            return tried && received > before
        }

        let erased = try await RelayBinary.run(
            binary, ["erase", "--data-dir", directory, "--user-key", "pdcanaryadauser", "--admin-token", Self.token, "--json"])
        #expect(erased.status == 0, "\(erased.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(erased.stdout.utf8)) as? [String: Any])
        #expect(report["registrations"] as? Int == 3, "\(erased.stdout)")
        #expect(report["deadLetters"] as? Int == 1)
        #expect((report["forwarded"] as? [String: Any])?["toCampaign"] as? Int == 1, "only the one Campaign took")
        #expect(report["notYetForwarded"] as? Int == 2)
        let rewritten = (report["rewrites"] as? [[String: Any]] ?? []).reduce(0) { $0 + ($1["entriesErased"] as? Int ?? 0) }
        #expect(rewritten >= 3, "in the log and the archive: \(erased.stdout)")

        // Campaign comes back: Bob goes (the probe her registration was granted passed on), hers
        // never does.
        campaign.emulator.currentFaults = faults
        try await post([Self.registration("bob", 1)])
        try await waitUntil("Bob's registration delivered", seconds: 240) {
            await campaign.emulator.recorder.acceptedRegistrations.contains { $0["registrationToken"] == "pdcanarybobtoken1" }
        }
        try await post([Self.registration("cara", 1)])
        try await waitUntil("a later registration delivered after Bob's", seconds: 240) {
            await campaign.emulator.recorder.acceptedRegistrations.contains { $0["registrationToken"] == "pdcanarycaratoken1" }
        }
        let tokens = await campaign.emulator.recorder.acceptedRegistrations.compactMap { $0["registrationToken"] }.sorted()
        #expect(
            tokens == ["pdcanaryadatoken1", "pdcanarybobtoken1", "pdcanarycaratoken1"], "the one delivered before the erasure, then Bob and Cara")
        #expect(try await http.get(url + "/v1/deadletters", headers: admin).body.components(separatedBy: #""id":"#).count == 1)
        let listed = try await http.get(url + "/v1/privacy/erasures", headers: admin)
        #expect(listed.status == 200 && listed.body.components(separatedBy: #""id":"#).count - 1 == 1, "\(listed.body)")
        #expect(try await http.get(url + "/v1/privacy/erasures").status == 401, "the audit needs the admin token")
        await http.shutdown()
        await server.stop()

        // From outside: nothing of hers in the log or the archive, Bob's still there, the counts exact.
        let again = try await RelayBinary.run(
            binary,
            [
                "erase", "--data-dir", directory, "--user-key", "pdcanaryadauser", "--archive-dir", archive, "--encryption-key-file", keys,
                "--dry-run",
                "--json",
            ])
        #expect(again.status == 0 && again.stdout.contains(#""registrations":0"#), "\(again.stdout) \(again.stderr)")
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", directory, "--encryption-key-file", keys])
        #expect(!dump.stdout.contains("pdcanaryada") && dump.stdout.contains("pdcanarybobtoken1"))
        #expect(ErasureCommandTests.adaCanaries(directory).isEmpty && ErasureCommandTests.adaCanaries(archive).isEmpty)
        #expect(!server.text.contains("pdcanaryada"), "the server's log lines hold no personal data")
        let stats = try await RelayBinary.run(binary, ["stats", "--data-dir", directory, "--json", "--encryption-key-file", keys])
        #expect(stats.stdout.contains(#""distinctTokens":2"#) && stats.stdout.contains(#""registrations":2,"#), "Bob and Cara: \(stats.stdout)")
    }

    @Test(
        "a registration on the wire when the erasure begins: the erasure answers only once Campaign answered it, and counts it as delivered"
    )
    func sendOnTheWire() async throws {
        let binary = try RelayBinary.path()
        let campaign = try await RunningEmulator.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("erase-wire-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try ChildProcess(
            binary,
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-format", "json", "--tracking-host", campaign.url,
                "--marketing-host", campaign.url, "--admin-token", Self.token,
            ]
        )
        defer { server.stopWithoutWaiting() }
        let url = "http://127.0.0.1:\(try await server.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        let http = TestHTTPClient()
        // Campaign holds her registration, whole, unanswered.
        let gate = campaign.emulator.registrationGate
        gate.close()
        let posted = try await http.post(
            url + "/v1/events", "[" + Self.registration("ada", 1) + "]", headers: [("Content-Type", "application/json")])
        #expect(posted.status == 200)
        try await waitUntil("her registration held by Campaign", seconds: 240) { gate.held == 1 }

        async let erasing = RelayBinary.run(
            binary, ["erase", "--data-dir", directory, "--user-key", "pdcanaryadauser", "--admin-token", Self.token, "--json"])
        // The erasure masked her registration and waits for the send on the wire; only then does
        // Campaign answer (200).
        _ = try await server.await(#"(erasure waits for the answers to sends of its registrations already on the wire)"#, seconds: 240)
        #expect(await campaign.emulator.recorder.acceptedRegistrations.isEmpty, "Campaign has not answered yet")
        gate.open()
        let erased = try await erasing
        #expect(erased.status == 0, "\(erased.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(erased.stdout.utf8)) as? [String: Any])
        #expect(report["registrations"] as? Int == 1, "\(erased.stdout)")
        #expect((report["forwarded"] as? [String: Any])?["toCampaign"] as? Int == 1, "delivered while the erasure waited: \(erased.stdout)")
        #expect(report["notYetForwarded"] as? Int == 0, "\(erased.stdout)")
        // Answered before the erasure's own answer; and never sent again.
        let accepted = await campaign.emulator.recorder.acceptedRegistrations.compactMap { $0["registrationToken"] }
        #expect(accepted == ["pdcanaryadatoken1"])
        let bob = try await http.post(url + "/v1/events", "[" + Self.registration("bob", 1) + "]", headers: [("Content-Type", "application/json")])
        #expect(bob.status == 200)
        try await waitUntil("Bob's registration delivered", seconds: 240) {
            await campaign.emulator.recorder.acceptedRegistrations.count == 2
        }
        #expect(
            await campaign.emulator.recorder.acceptedRegistrations.compactMap { $0["registrationToken"] } == [
                "pdcanaryadatoken1", "pdcanarybobtoken1",
            ])
        await http.shutdown()
        await server.stop()
        await campaign.stop()
    }
}

/// An erasure a crash cut short after writing its plan, finished by `serve` as it starts: the
/// segment it rewrites is the one the server would append to, and what the server acknowledges
/// afterwards is kept (the segment is sealed before it is rewritten).
@Suite("An unfinished erasure finished by serve", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct UnfinishedErasureTests {
    @Test("serve finishes a plan a crash left before it serves; the events it then acknowledges survive a restart")
    func serveFinishesAPlan() async throws {
        let binary = try RelayBinary.path()
        let directory = try await ErasureCommandTests.prepared("unfinished")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The plan of an erasure of Ada's two registrations (sequences 1 and 5), as step 2 writes it.
        let target = { (sequence: Int, platform: String) in
            #"{"forwarded":false,"handedOn":false,"integrationKey":"app","isCopy":false,"platform":"\#(platform)","sequence":\#(sequence),"tenant":"","timeNanoseconds":0,"tokenDigest":"0"}"#
        }
        let plan =
            #"{"archiveDirectories":[],"boundary":7,"countsIntoFleet":false,"deadLetterIDs":[],"id":"e20261127000000-00000001","lastDeliveredAt":[],"requestedAt":"2026-11-27T00:00:00.000Z","selectorHash":"hash:000000000000","selectorKind":"user-key","targets":["#
            + target(1, "android") + "," + target(5, "ios") + "]}"
        #expect(FileManager.default.createFile(atPath: directory + "/wal/erasure-e20261127000000-00000001.plan", contents: Data(plan.utf8)))

        let server = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-format", "json"])
        let url = "http://127.0.0.1:\(try await server.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        let http = TestHTTPClient()
        let hits = (1...3).map { #"{"kind":"track","action":"click","messageId":"\#(77_000 + $0)","deliveryId":"d2"}"# }
        let answer = try await http.post(url + "/v1/events", "[" + hits.joined(separator: ",") + "]", headers: [("Content-Type", "application/json")])
        #expect(answer.status == 200 && answer.body.contains(#""firstSequence":7"#), "\(answer.body)")
        await http.shutdown()
        await server.stop()
        #expect(server.text.contains("finishing an erasure a stop cut short"))

        var expected = ErasureCommandTests.erased
        expected += (1...3).map { #"{"seq":\#(6 + $0),"kind":"track","action":"click","messageId":"\#(77_000 + $0)","deliveryId":"d2"}"# }
        #expect(try await ErasureCommandTests.dump(directory) == expected)
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: directory + "/wal")).contains { $0.hasSuffix(".plan") })
        #expect((try? String(contentsOfFile: directory + "/erasures.jsonl", encoding: .utf8))?.contains("e20261127000000-00000001") == true)
    }
}

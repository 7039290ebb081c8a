import CampaignEmulator
import Foundation
import NIOConcurrencyHelpers
import RelayIO
import RelayProcessTestSupport
import RelaySQLite
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Encryption at rest as an operator meets it, with the real binary: a log sealed with a key file
/// is not opened without its key (and nothing changes), `wal rekey` rotates keys beside a running
/// server and survives SIGKILL at any moment, and dead letters are sealed in forwarding.sqlite.
@Suite("Encryption at rest from the command line", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct EncryptionCommandTests {
    // MARK: Helpers

    /// 32 random bytes: one AES-256 key.

    /// Writes a key file of `keys` (id, bytes), newest last, with `mode`.
    static func writeKeyFile(_ path: String, _ keys: [(id: String, bytes: [UInt8])], mode: mode_t = 0o600) throws {
        let text =
            "# keys of the test's log, newest last\n" + keys.map { "\($0.id):\(Data($0.bytes).base64EncodedString())" }.joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try #require(chmod(path, mode) == 0, "chmod \(path): \(String(cString: strerror(errno)))")
    }

    /// Every regular file under `directory`, by path relative to it, with its bytes.
    static func snapshot(_ directory: String) -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let relative = enumerator?.nextObject() as? String {
            var info = stat()
            guard lstat("\(directory)/\(relative)", &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            files[relative] = FileManager.default.contents(atPath: "\(directory)/\(relative)") ?? Data()
        }
        return files
    }

    /// The segment files of `directory`'s log, sorted.
    static func segments(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "\(directory)/wal")) ?? []).filter { $0.hasSuffix(".wal") }.sorted()
    }

    /// What `wal verify --json` reports (the fields these tests compare).
    struct Verified: Decodable, Equatable {
        var segments: Int
        var frames: Int
        var events: Int
        var encryptedFrames: Int
        var unopenedFrames: Int
        var framesByKeyId: [String: Int]
        var corruptFrames: Int
        var tornTails: Int
        var missingSequences: Int
        var clean: Bool
    }

    /// What `wal rekey --json` prints.
    struct Rekeyed: Decodable {
        struct Directory: Decodable {
            var directory: String
            var segmentsRewritten: Int
            var segmentsCurrent: Int
            var segmentsGone: Int
            var activeSegmentSkipped: String?
            var framesEncrypted: Int
            var framesResealed: Int
            var damagedRangesKept: Int
            var keyId: String
        }
        var directories: [Directory]
        var deadLettersResealed: Int
    }

    static func verify(_ binary: String, _ directory: String, keyFile: String?, label: String) async throws -> Verified {
        let run = try await RelayBinary.run(
            binary, ["wal", "verify", "--json", "--data-dir", directory] + (keyFile.map { ["--encryption-key-file", $0] } ?? []), seconds: 120)
        try #require(run.status == 0, "\(label): wal verify exit \(run.status): \(run.stdout) \(run.stderr)")
        return try JSONDecoder().decode(Verified.self, from: Data(run.stdout.utf8))
    }

    static func rekey(_ binary: String, _ directory: String, keyFile: String, label: String) async throws -> (Rekeyed, RelayBinary.Outcome) {
        let run = try await RelayBinary.run(
            binary, ["wal", "rekey", "--json", "--data-dir", directory, "--encryption-key-file", keyFile], seconds: 120)
        try #require(run.status == 0, "\(label): wal rekey exit \(run.status): \(run.stdout) \(run.stderr)")
        return (try JSONDecoder().decode(Rekeyed.self, from: Data(run.stdout.utf8)), run)
    }

    /// `wal dump`'s standard output; the run must succeed and skip nothing.
    static func dump(_ binary: String, _ directory: String, keyFile: String?, label: String) async throws -> String {
        let run = try await RelayBinary.run(
            binary, ["wal", "dump", "--data-dir", directory] + (keyFile.map { ["--encryption-key-file", $0] } ?? []), seconds: 120)
        try #require(run.status == 0, "\(label): wal dump exit \(run.status): \(run.stderr)")
        #expect(!run.stderr.contains("skipped"), "\(label): wal dump skipped damage: \(run.stderr)")
        return run.stdout
    }

    /// The lines of a dump by sequence number, and the message id of each.
    static func parse(_ dump: String) throws -> (lines: [Int: String], ids: [Int: String], order: [Int]) {
        var lines: [Int: String] = [:]
        var ids: [Int: String] = [:]
        var order: [Int] = []
        for text in dump.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)")
            let sequence = try #require(object["seq"] as? Int, "no seq: \(text)")
            lines[sequence] = String(text)
            ids[sequence] = object["messageId"] as? String ?? ""
            order.append(sequence)
        }
        return (lines, ids, order)
    }

    // MARK: 1. No key, no opening

    @Test("serve (and ingest) refuse an encrypted log without its key, naming the key, with exit 1 and nothing changed")
    func refusesWithoutTheKey() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("enc-refuse")
        defer { removeTree(directory) }
        let keys = temporaryDirectory("enc-refuse-keys")
        defer { removeTree(keys) }
        let k1 = TestKeys.bytes("k1")
        try Self.writeKeyFile("\(keys)/right", [("k1", k1)])
        try Self.writeKeyFile("\(keys)/other", [("other", TestKeys.bytes("other"))])
        try Self.writeKeyFile("\(keys)/impostor", [("k1", TestKeys.bytes("impostor"))])
        try Self.writeKeyFile("\(keys)/open-to-group", [("k1", k1)], mode: 0o640)

        let lines = (1...3000).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"enc","time":"2026-11-21T00:00:00.000Z"}"# }
        let ingest = try await RelayBinary.run(
            binary,
            ["ingest", "-", "--data-dir", directory, "--segment-bytes", "4096", "--batch-bytes", "1024", "--encryption-key-file", "\(keys)/right"],
            input: Data((lines.joined(separator: "\n") + "\n").utf8), seconds: 120)
        try #require(ingest.status == 0, "\(ingest.stderr)")
        let segments = Self.segments(directory)
        #expect(segments.count >= 3, "\(segments)")
        let verified = try await Self.verify(binary, directory, keyFile: nil, label: "after ingest")
        #expect(verified.events == 3000 && verified.encryptedFrames == verified.frames && verified.framesByKeyId == ["k1": verified.frames])
        let before = Self.snapshot(directory)
        #expect(before.keys.contains { $0.hasPrefix("wal/") && $0.hasSuffix(".wal") })

        let first = "Error: cannot read the frame of segment \(segments[0]) at offset 32: "
        let cases: [(label: String, arguments: [String], message: String)] = [
            (
                "serve without a key file", ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory],
                first + "it is encrypted with key k1, and no --encryption-key-file was given: give the key file that holds k1; nothing was changed"
            ),
            (
                "serve with another key id", ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--encryption-key-file", "\(keys)/other"],
                first
                    + "it is encrypted with key k1, which the key file does not hold (it holds other): add k1 to the key file, or give the file that holds it; nothing was changed"
            ),
            (
                "serve with another key under the same id",
                ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--encryption-key-file", "\(keys)/impostor"],
                first
                    + "it does not authenticate under the key file's key k1: that key is not the one that sealed it (check the key file), or the frame was altered; nothing was changed"
            ),
            (
                "ingest without a key file (it would write frames in the clear beside sealed ones)", ["ingest", "-", "--data-dir", directory],
                first + "it is encrypted with key k1, and no --encryption-key-file was given: give the key file that holds k1; nothing was changed"
            ),
            (
                "serve with a key file open to its group",
                ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--encryption-key-file", "\(keys)/open-to-group"],
                "is open to its group or others (mode 640): run chmod 600 \(keys)/open-to-group"
            ),
        ]
        for (label, arguments, message) in cases {
            let run = try await BoundedRun.run(binary, arguments, seconds: 60)
            #expect(run.ending == .exited(1), "\(label): \(run.ending) \(run.stderr)")
            #expect(run.stderr.contains(message), "\(label): \(run.stderr)")
            let after = Self.snapshot(directory)
            #expect(after.keys.sorted() == before.keys.sorted(), "\(label): files appeared or went: \(after.keys.sorted()) \(before.keys.sorted())")
            let changed = before.filter { after[$0.key] != $0.value }.map(\.key).sorted()
            #expect(changed.isEmpty, "\(label): files changed: \(changed)")
        }

        // With its key the same log opens: the refusals were about the keys, not the log.
        let server = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--encryption-key-file", "\(keys)/right"])
        defer { FaultyServe.killIfRunning(server) }
        _ = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        #expect(await FaultyServe.stop(server, label: "serve with the key") == .exited(0))
    }

    // MARK: 2. Rekey beside a running server

    @Test(
        "wal rekey beside a running serve asks it to seal its active segment and rewrites that one too: once it is done, the older key is no longer needed, even on a quiet relay; a server with another key, or without the admin token, is refused"
    )
    func rekeyBesideServe() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("enc-rekey-serve")
        defer { removeTree(directory) }
        let keys = temporaryDirectory("enc-rekey-serve-keys")
        defer { removeTree(keys) }
        let (a1, b2) = (TestKeys.bytes("a1"), TestKeys.bytes("b2"))
        let fileA = "\(keys)/a"
        let fileB = "\(keys)/b"
        let fileC = "\(keys)/c"
        try Self.writeKeyFile(fileA, [("a1", a1)])
        try Self.writeKeyFile(fileB, [("a1", a1), ("b2", b2)])
        let token = "rekey-admin-token-0123456789"
        let serve = { (keyFile: String) in
            try ChildProcess(
                binary,
                [
                    "serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--segment-bytes", "4096", "--encryption-key-file", keyFile,
                    "--admin-token", token,
                ])
        }
        let url = NIOLockedValueBox("")
        let http = TestHTTPClient()
        let load = IngestLoad(batchSize: 20, deliveryId: "rekey")
        let acknowledged = { load.score.withLockedValue { $0.acknowledged.count } }

        // A server with a1 takes events into several segments.
        let first = try serve(fileA)
        defer { FaultyServe.killIfRunning(first) }
        let firstPort = try await first.await(#"address=127\.0\.0\.1:(\d+)"#)
        url.withLockedValue { $0 = "http://127.0.0.1:\(firstPort)" }
        var clients = (0..<2).map { client in Task { await load.run(client: client, http, { url.withLockedValue { $0 } }) } }
        try await waitUntil("1,000 events acknowledged in at least 6 segments", seconds: 120) {
            acknowledged() >= 1000 && Self.segments(directory).count >= 6
        }
        load.stopping.store(true, ordering: .relaxed)
        for client in clients { await client.value }

        // A key file whose newest key the server does not have: refused before anything is rewritten.
        let otherKey = try await RelayBinary.run(
            binary, ["wal", "rekey", "--data-dir", directory, "--encryption-key-file", fileB, "--admin-token", token], seconds: 120)
        #expect(otherKey.status == 1, "\(otherKey.stdout) \(otherKey.stderr)")
        #expect(
            otherKey.stderr.contains(
                "seals new frames with key a1, not with b2, the newest of \(fileB): restart it with this key file first (nothing was rewritten)"),
            "\(otherKey.stderr)")
        #expect(try await Self.verify(binary, directory, keyFile: fileB, label: "after the refusal").framesByKeyId.keys.sorted() == ["a1"])
        #expect(await FaultyServe.stop(first, label: "serve with a1") == .exited(0), "\(first.text.suffix(2000))")
        let before = try Self.parse(try await Self.dump(binary, directory, keyFile: fileB, label: "before the rekey"))
        #expect(before.lines.count >= 1000)

        // Restarted with the new key file, the relay is quiet: the segment it appends to holds a1
        // frames, and nothing rolls it over.
        let second = try serve(fileB)
        defer { FaultyServe.killIfRunning(second) }
        let secondPort = try await second.await(#"address=127\.0\.0\.1:(\d+)"#)
        url.withLockedValue { $0 = "http://127.0.0.1:\(secondPort)" }
        let noToken = try await RelayBinary.run(binary, ["wal", "rekey", "--data-dir", directory, "--encryption-key-file", fileB], seconds: 120)
        #expect(noToken.status == 1, "\(noToken.stdout) \(noToken.stderr)")
        #expect(
            noToken.stderr.contains(
                "holds the log and refused to seal its active segment for the rewrite (401): give wal rekey the server's admin token (--admin-token, or CAMPAIGN_RELAY_ADMIN_TOKEN)"
            ), "\(noToken.stderr)")
        let rekeyRun = try await RelayBinary.run(
            binary, ["wal", "rekey", "--json", "--data-dir", directory, "--encryption-key-file", fileB, "--admin-token", token], seconds: 120)
        try #require(rekeyRun.status == 0, "wal rekey beside serve: \(rekeyRun.stdout) \(rekeyRun.stderr)")
        let rekeyed = try JSONDecoder().decode(Rekeyed.self, from: Data(rekeyRun.stdout.utf8))
        let log = try #require(rekeyed.directories.first, "\(rekeyRun.stdout)")
        #expect(rekeyRun.stderr.contains("the server sealed its active segment for the rewrite"), "\(rekeyRun.stderr)")
        #expect(rekeyed.directories.count == 1 && log.directory == "\(directory)/wal" && log.keyId == "b2")
        #expect(log.segmentsRewritten == Self.segments(directory).count && log.segmentsCurrent == 0 && log.segmentsGone == 0, "\(rekeyRun.stdout)")
        #expect(log.framesEncrypted == 0 && log.framesResealed >= log.segmentsRewritten && log.damagedRangesKept == 0, "\(rekeyRun.stdout)")

        // The server goes on taking events, into new segments, after the rekey.
        let acknowledgedAfterRekey = acknowledged()
        let segmentsAfterRekey = Self.segments(directory).count
        load.stopping.store(false, ordering: .relaxed)
        clients = (2..<4).map { client in Task { await load.run(client: client, http, { url.withLockedValue { $0 } }) } }
        try await waitUntil("600 more events acknowledged and 2 more segments after the rekey", seconds: 120) {
            acknowledged() >= acknowledgedAfterRekey + 600 && Self.segments(directory).count >= segmentsAfterRekey + 2
        }
        load.stopping.store(true, ordering: .relaxed)
        for client in clients { await client.value }
        await http.shutdown()
        #expect(await FaultyServe.stop(second, label: "serve after the rekey") == .exited(0), "\(second.text.suffix(2000))")
        let score = load.score.withLockedValue { $0 }
        #expect(score.unexpected.isEmpty && score.transportFailures == 0, "\(score.unexpected.prefix(3)) \(score.transportFailures)")

        // One rekey beside the server was enough: b2 alone, no second run.
        let final = try await Self.verify(binary, directory, keyFile: fileB, label: "after the rekey")
        #expect(final.framesByKeyId == ["b2": final.frames], "\(final.framesByKeyId)")
        #expect(final.clean && final.encryptedFrames == final.frames && final.unopenedFrames == 0 && final.missingSequences == 0, "\(final)")

        // Every event is still there, as it was: the dump before the rekey, and the events added meanwhile.
        let dumped = try await Self.dump(binary, directory, keyFile: fileB, label: "after the rekey")
        let after = try Self.parse(dumped)
        #expect(after.lines.count == final.events)
        let altered = before.lines.filter { after.lines[$0.key] != $0.value }.map(\.key).sorted()
        #expect(altered.isEmpty, "\(altered.count) events of the dump before the rekey differ after it, e.g. sequences \(altered.prefix(5))")
        #expect(after.order == after.order.sorted() && Set(after.order).count == after.order.count, "sequences not strictly increasing")
        let counts = after.ids.values.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
        let missing = score.acknowledged.filter { counts[$0] == nil }
        #expect(missing.isEmpty, "\(missing.count) acknowledged events missing, e.g. \(missing.sorted().prefix(5))")
        #expect(counts.filter { $0.value > 1 }.isEmpty, "events in the log twice: \(counts.filter { $0.value > 1 }.keys.sorted().prefix(5))")
        #expect(counts.keys.filter { !score.sent.contains($0) }.isEmpty, "events in the log that were never sent")
        #expect(after.lines.count == score.acknowledged.count, "no faults: every event sent was acknowledged and logged once")

        // a1 is no longer needed: b2 alone reads the same log; a1 alone reads none of it.
        try Self.writeKeyFile(fileC, [("b2", b2)])
        #expect(try await Self.dump(binary, directory, keyFile: fileC, label: "b2 only") == dumped)
        let oldKey = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", directory, "--encryption-key-file", fileA], seconds: 120)
        #expect(oldKey.status == 1 && oldKey.stdout.isEmpty, "\(oldKey.status) \(oldKey.stdout.prefix(200))")
        #expect(oldKey.stderr.contains("it is encrypted with key b2, which the key file does not hold (it holds a1)"), "\(oldKey.stderr)")

        // A run without a server finds nothing to do; the counts, caught up with b2 alone, hold every event once.
        let (third, thirdRun) = try await Self.rekey(binary, directory, keyFile: fileC, label: "third")
        #expect(third.directories.first?.segmentsRewritten == 0 && third.directories.first?.segmentsCurrent == final.segments, "\(thirdRun.stdout)")
        let stats = try await RelayBinary.run(binary, ["stats", "--json", "--data-dir", directory, "--encryption-key-file", fileC], seconds: 120)
        #expect(stats.status == 0, "\(stats.stderr)")
        let counted = try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any]
        let delivery = (counted?["deliveries"] as? [[String: Any]])?.first { $0["deliveryId"] as? String == "rekey" }
        #expect(delivery?["opens"] as? Int == score.acknowledged.count, "\(stats.stdout)")
        #expect(counted?["aggregatedThrough"] as? Int == after.order.last, "\(stats.stdout)")
    }

    static func inodes(_ walDirectory: String, temporaries: Bool = false) -> [String: UInt64] {
        var result: [String: UInt64] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: walDirectory)) ?? [] {
            guard name.hasSuffix(".wal") || (temporaries && name.hasSuffix(".tmp")) else { continue }
            var info = stat()
            if stat("\(walDirectory)/\(name)", &info) == 0 { result[name] = UInt64(info.st_ino) }
        }
        return result
    }

    // MARK: 4. Dead letters

    @Test(
        "dead letters are sealed at rest: no canary in forwarding.sqlite (nor its journal) nor anywhere in the data directory; the listing shows it only with the key, and wal rekey seals them again"
    )
    func deadLettersSealed() async throws {
        let binary = try RelayBinary.path()
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["known"]
        let campaign = try await RunningEmulator.start(faults: faults)
        let directory = temporaryDirectory("enc-dead-letters")
        defer { removeTree(directory) }
        let keys = temporaryDirectory("enc-dead-letters-keys")
        defer { removeTree(keys) }
        let (f1, f2) = (TestKeys.bytes("f1"), TestKeys.bytes("f2"))
        try Self.writeKeyFile("\(keys)/f1", [("f1", f1)])

        // Lowercase letters and digits: the same in JSON, form encoding and SQLite's bytes.
        let canary = "zqsealcanary"
        let lines = [
            #"{"kind":"register","platform":"ios","integrationKey":"stranger","registrationToken":"\#(canary)token","userKey":"\#(canary)user","deviceName":"\#(canary)device"}"#,
            #"{"kind":"register","platform":"ios","integrationKey":"known","registrationToken":"\#(canary)token2","userKey":"\#(canary)user2"}"#,
        ]
        // Uncompressed frames: were the log in the clear, the canary would be in its bytes too.
        let ingest = try await RelayBinary.run(
            binary, ["ingest", "-", "--data-dir", directory, "--compression-level", "0", "--encryption-key-file", "\(keys)/f1"],
            input: Data((lines.joined(separator: "\n") + "\n").utf8), seconds: 120)
        try #require(ingest.status == 0, "\(ingest.stderr)")
        let upload = try await RelayBinary.run(
            binary,
            [
                "upload", "--until-drained", "--marketing-host", campaign.url, "--data-dir", directory, "--encryption-key-file", "\(keys)/f1",
                "--json",
            ],
            seconds: 120)
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(upload.stdout.contains(#""deadLettered":1"#), "\(upload.stdout)")
        #expect(await campaign.emulator.recorder.acceptedRegistrations.count == 1)
        await campaign.stop()

        let store = ForwardingStoreFiles(directory: directory)
        #expect(FileManager.default.fileExists(atPath: store.database))
        store.expectNo(canary, label: "after the upload")
        for (relative, bytes) in Self.snapshot(directory) {
            #expect(bytes.range(of: Data(canary.utf8)) == nil, "\(relative) holds the canary in the clear")
        }
        #expect(try await store.sealedColumns() == [["f1", "f1", "f1"]], "event_json, url and response_body are sealed with f1")

        // With the key the listing shows the letter, as it came; without it, it names the key.
        let revealed = try await RelayBinary.run(
            binary, ["deadletter", "list", "--json", "--reveal-personal-data", "--data-dir", directory, "--encryption-key-file", "\(keys)/f1"],
            seconds: 60)
        #expect(revealed.status == 0, "\(revealed.stderr)")
        #expect(
            revealed.stdout.contains(#""userKey":"\#(canary)user""#) && revealed.stdout.contains(#""registrationToken":"\#(canary)token""#),
            "\(revealed.stdout)")
        #expect(revealed.stdout.contains(#""responseBody":"Unknown integration key 'stranger' (UnknownUUID)\n""#), "\(revealed.stdout)")
        #expect(revealed.stdout.contains(#""url":"\#(campaign.url)/nms/mobile/1/registerIOS.jssp""#), "\(revealed.stdout)")
        let hidden = try await RelayBinary.run(
            binary, ["deadletter", "list", "--json", "--data-dir", directory, "--encryption-key-file", "\(keys)/f1"], seconds: 60)
        #expect(hidden.status == 0 && !hidden.stdout.contains(canary) && hidden.stdout.contains("hash:"), "\(hidden.stdout)")
        let keyless = try await RelayBinary.run(binary, ["deadletter", "list", "--json", "--data-dir", directory], seconds: 60)
        #expect(keyless.status == 1 && !keyless.stdout.contains(canary), "\(keyless.status) \(keyless.stdout)")
        #expect(
            keyless.stderr.contains("dead letter 1 cannot be read: it is encrypted with key f1, and no --encryption-key-file was given"),
            "\(keyless.stderr)")

        // wal rekey to f2 seals the letter again: f2 alone lists it, f1 alone no longer does.
        try Self.writeKeyFile("\(keys)/f1f2", [("f1", f1), ("f2", f2)])
        try Self.writeKeyFile("\(keys)/f2", [("f2", f2)])
        let logged = try await Self.verify(binary, directory, keyFile: "\(keys)/f1", label: "before the rekey")
        #expect(logged.events == 2 && logged.framesByKeyId == ["f1": logged.frames], "\(logged)")
        let (rekeyed, rekeyRun) = try await Self.rekey(binary, directory, keyFile: "\(keys)/f1f2", label: "dead letters")
        #expect(rekeyed.deadLettersResealed == 1, "\(rekeyRun.stdout)")
        #expect(rekeyed.directories.first?.framesResealed == logged.frames && rekeyed.directories.first?.framesEncrypted == 0, "\(rekeyRun.stdout)")
        store.expectNo(canary, label: "after the rekey")
        #expect(try await store.sealedColumns() == [["f2", "f2", "f2"]])
        let withF2 = try await RelayBinary.run(
            binary, ["deadletter", "list", "--json", "--reveal-personal-data", "--data-dir", directory, "--encryption-key-file", "\(keys)/f2"],
            seconds: 60)
        #expect(withF2.status == 0 && withF2.stdout == revealed.stdout, "\(withF2.stdout)\n\(revealed.stdout)")
        let withF1 = try await RelayBinary.run(
            binary, ["deadletter", "list", "--json", "--data-dir", directory, "--encryption-key-file", "\(keys)/f1"], seconds: 60)
        #expect(
            withF1.status == 1 && withF1.stderr.contains("it is encrypted with key f2, which the key file does not hold (it holds f1)"),
            "\(withF1.stderr)")
    }

    /// forwarding.sqlite of a data directory and its write-ahead journal, read as bytes and as a
    /// database (by a process no relay runs beside).
    struct ForwardingStoreFiles {
        var directory: String
        var database: String { "\(directory)/forwarding.sqlite" }

        /// Checks that neither the database nor its journal (a checkpoint may be pending) holds `text`.
        func expectNo(_ text: String, label: String) {
            for path in [database, database + "-wal", database + "-journal"] {
                guard let bytes = FileManager.default.contents(atPath: path) else { continue }
                #expect(bytes.range(of: Data(text.utf8)) == nil, "\(label): \(path) holds \(text) in the clear")
            }
        }

        /// The key id of each sealed column (event_json, url, response_body) of each dead letter;
        /// "clear" for a value in the clear. Read on a thread made for blocking calls.
        func sealedColumns() async throws -> [[String]] {
            let database = self.database
            return try await BlockingExecutor(name: "dead-letter-columns").run { () throws(SQLiteError) -> [[String]] in
                let connection = try SQLiteConnection(path: database, readOnly: true)
                defer { connection.close() }
                let statement = try connection.prepare("SELECT event_json, url, response_body FROM dead_letters ORDER BY id")
                defer { statement.finalize() }
                var rows: [[String]] = []
                while try statement.step() {
                    rows.append(
                        (0..<3).map { column in
                            let value = statement.text(Int32(column)) ?? ""
                            guard value.hasPrefix("sealed:") else { return "clear" }
                            return String(value.dropFirst("sealed:".count).prefix { $0 != ":" })
                        })
                }
                return rows
            }
        }
    }

    @Test("segments rekeyed in the log after they were archived still leave the log: the archive takes the copy sealed anew")
    func archivedThenRekeyedSegmentsLeave() async throws {
        let binary = try RelayBinary.path()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rekey-archive-\(UUID().uuidString)").path
        let archive = directory + "-archive"
        let keys = directory + "-keys"
        defer { for path in [directory, archive, keys] { try? FileManager.default.removeItem(atPath: path) } }
        try Self.writeKeyFile(keys, [("r1", TestKeys.bytes("r1"))])
        let lines = (1...2000).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"d1"}"# }.joined(separator: "\n") + "\n"
        let ingest = try await RelayBinary.run(
            binary, ["ingest", "-", "--segment-bytes", "4096", "--compression-level", "0", "--batch-bytes", "1024", "--data-dir", directory],
            input: Data(lines.utf8))
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let archived = try await RelayBinary.run(binary, ["wal", "archive", "--to", archive, "--data-dir", directory])
        #expect(archived.status == 0, "\(archived.stderr)")
        let sealedSegments = Self.segments(directory).count - 1
        #expect(sealedSegments >= 3, "\(Self.segments(directory))")
        // The log's segments are sealed anew; the archive keeps its copies in the clear (no --archive-dir).
        let (rekeyed, _) = try await Self.rekey(binary, directory, keyFile: keys, label: "rekey")
        #expect(rekeyed.directories.map(\.segmentsRewritten) == [Self.segments(directory).count])
        // Counting with no retention: every passed segment leaves for the archive, which takes the log's copy.
        let aggregate = try await RelayBinary.run(
            binary, ["aggregate", "--retain", "0", "--archive-dir", archive, "--encryption-key-file", keys, "--data-dir", directory])
        #expect(aggregate.status == 0, "\(aggregate.stderr)")
        #expect(!aggregate.stderr.contains("already holds a different"), "\(aggregate.stderr)")
        #expect(Self.segments(directory).count == 1, "every passed segment left the log: \(Self.segments(directory))")
        let verify = try await RelayBinary.run(binary, ["wal", "verify", "--json", "--archive", archive, "--data-dir", directory])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any])
        #expect(report["frames"] as? Int == report["encryptedFrames"] as? Int, "the archive holds the sealed copies: \(verify.stdout)")
        let replayed = try await RelayBinary.run(
            binary,
            ["replay", "--from", "1", "--dry-run", "--json", "--from-archive", archive, "--encryption-key-file", keys, "--data-dir", directory])
        #expect(replayed.status == 0, "\(replayed.stderr)")
        #expect(replayed.stdout.contains(#""events":2000"#), "\(replayed.stdout)")
    }
}

/// `wal rekey` killed with SIGKILL at varying moments, again and again, beside the helpers of
/// ``EncryptionCommandTests``.
@Suite("wal rekey under kill -9", .serialized, .timeLimit(.minutes(10)), .tier(.thorough), .seedInFailures)
struct RekeyKillTests {

    @Test(
        "wal rekey killed with SIGKILL at varying moments leaves every segment old or new: the log dumps the same after each kill, and a last run completes it"
    )
    func rekeySurvivesKillNine() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("enc-rekey-kill9")
        defer { removeTree(directory) }
        let keys = temporaryDirectory("enc-rekey-kill9-keys")
        defer { removeTree(keys) }
        let keyFile = "\(keys)/keys"
        let seed = TestSeed.make(for: "wal rekey kill -9")
        var generator = SeededGenerator(seed: seed)

        // 5,000 hits, uncompressed, in batches of about 1 KiB: some 22 segments of 4 KiB, in the clear.
        let actions = ["impression", "open", "click"]
        let lines = (1...5_000).map {
            #"{"kind":"track","action":"\#(actions[$0 % 3])","messageId":"\#($0)","deliveryId":"r\#(100 + $0 % 5)","time":"2026-11-21T00:00:00.000Z"}"#
        }
        let ingest = try await RelayBinary.run(
            binary,
            ["ingest", "-", "--data-dir", directory, "--segment-bytes", "4096", "--batch-bytes", "1024", "--compression-level", "0"],
            input: Data((lines.joined(separator: "\n") + "\n").utf8), seconds: 120)
        try #require(ingest.status == 0, "\(ingest.stderr)")
        let reference = try await EncryptionCommandTests.dump(binary, directory, keyFile: nil, label: "reference")
        let plain = try await EncryptionCommandTests.verify(binary, directory, keyFile: nil, label: "reference")
        #expect(plain.events == 5_000 && plain.encryptedFrames == 0 && plain.framesByKeyId == [:])
        let segmentCount = EncryptionCommandTests.segments(directory).count
        try #require(segmentCount >= 15, "\(EncryptionCommandTests.segments(directory))")

        // Each run's newest key is new every 4 cycles, so the log holds frames in the clear and
        // under several keys at once; the key file keeps every key, newest last.
        var ring: [(id: String, bytes: [UInt8])] = []
        var killedWhileRunning = 0
        var killedBeforeAnyRename = 0
        var cycle = 0
        while killedWhileRunning < 12, cycle < 40 {
            if cycle % 4 == 0 {
                ring.append(("k\(cycle / 4)", TestKeys.bytes("rekey kill \(seed) k\(cycle / 4)")))
                try EncryptionCommandTests.writeKeyFile(keyFile, ring)
            }
            // Kill once `target` segments were renamed into place (0: once the first temporary copy
            // exists), then 0 to 2.5 ms later: while writing, syncing, renaming or between segments.
            let target = cycle % 4 == 1 ? 0 : Int(1 + generator.next() % 6)
            let delay = UInt32(generator.next() % 2_500)
            let label = "seed \(seed) cycle \(cycle) (after \(target) renames + \(delay) µs)"
            let walDirectory = "\(directory)/wal"
            let output = "\(keys)/rekey-\(cycle).out"
            let outcome = try await onThreadOfItsOwn { () throws -> (killed: Bool, renamed: Int, waitedOut: Bool, ending: String, output: String) in
                let inodes = EncryptionCommandTests.inodes(walDirectory)
                let child = try SpawnedProcess(
                    binary, ["wal", "rekey", "--data-dir", directory, "--encryption-key-file", keyFile], output: .file(output), error: .sameAsOutput)
                let deadline = Date().addingTimeInterval(30)
                var renamed = 0
                while child.isRunning, Date() < deadline {
                    let now = EncryptionCommandTests.inodes(walDirectory, temporaries: true)
                    renamed = inodes.count { now[$0.key] != nil && now[$0.key] != $0.value }
                    let copying = now.keys.contains { $0.hasSuffix(".tmp") }
                    if renamed >= target, target > 0 || copying || renamed > 0 { break }
                    usleep(100)
                }
                let waitedOut = child.isRunning && Date() >= deadline
                usleep(delay)
                let killed = child.isRunning
                kill(child.processIdentifier, SIGKILL)
                child.waitUntilExit()
                let ending = "\(child.terminationReason == .exit ? "exit" : "signal") \(child.terminationStatus)"
                return (killed, renamed, waitedOut, ending, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
            }
            #expect(!outcome.waitedOut, "\(label): in 30 s the run renamed only \(outcome.renamed) segments: \(outcome.output)")
            if outcome.killed {
                killedWhileRunning += 1
                #expect(outcome.ending == "signal \(SIGKILL)", "\(label): \(outcome.ending) \(outcome.output)")
            } else {
                // It finished first: it must have finished well.
                #expect(outcome.ending == "exit 0", "\(label): \(outcome.ending) \(outcome.output)")
            }
            if outcome.killed, outcome.renamed == 0 { killedBeforeAnyRename += 1 }

            // Every segment is the old file or the new one: the same events, no damage.
            let dumped = try await EncryptionCommandTests.dump(binary, directory, keyFile: keyFile, label: label)
            #expect(dumped == reference, "\(label): the dump differs from the reference (\(dumped.count) bytes, \(reference.count) expected)")
            let verified = try await EncryptionCommandTests.verify(binary, directory, keyFile: keyFile, label: label)
            #expect(
                verified.clean && verified.events == 5_000 && verified.frames == plain.frames && verified.missingSequences == 0,
                "\(label): \(verified)")
            #expect(verified.segments == segmentCount, "\(label): \(verified.segments) segments")
            #expect(verified.unopenedFrames == 0)
            cycle += 1
        }
        #expect(killedWhileRunning >= 12, "\(killedWhileRunning) of \(cycle) runs were killed while rekeying")
        print("\(killedWhileRunning) of \(cycle) rekey runs killed while running, \(killedBeforeAnyRename) of them before a rename was seen")

        // A complete run finishes the work: every frame under the newest key, nothing left over.
        let (done, doneRun) = try await EncryptionCommandTests.rekey(binary, directory, keyFile: keyFile, label: "the complete run")
        let report = try #require(done.directories.first, "\(doneRun.stdout)")
        #expect(report.segmentsRewritten + report.segmentsCurrent == segmentCount && report.activeSegmentSkipped == nil, "\(doneRun.stdout)")
        #expect(report.keyId == ring.last?.id)
        let unkeyed = try await EncryptionCommandTests.verify(binary, directory, keyFile: nil, label: "after the complete run")
        #expect(unkeyed.frames == plain.frames && unkeyed.encryptedFrames == plain.frames && unkeyed.unopenedFrames == plain.frames, "\(unkeyed)")
        #expect(unkeyed.framesByKeyId == [ring[ring.count - 1].id: plain.frames], "\(unkeyed.framesByKeyId)")
        #expect(unkeyed.clean && unkeyed.events == 5_000)
        #expect(try await EncryptionCommandTests.dump(binary, directory, keyFile: keyFile, label: "after the complete run") == reference)
        let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: "\(directory)/wal")) ?? []).filter { $0.hasSuffix(".tmp") }
        #expect(leftovers.isEmpty, "temporary copies left after a complete run: \(leftovers)")
        let (again, againRun) = try await EncryptionCommandTests.rekey(binary, directory, keyFile: keyFile, label: "once more")
        #expect(again.directories.first?.segmentsRewritten == 0 && again.directories.first?.segmentsCurrent == segmentCount, "\(againRun.stdout)")
    }

    /// The inode of each segment file of `walDirectory` (and of each temporary copy, with `temporaries`).
}

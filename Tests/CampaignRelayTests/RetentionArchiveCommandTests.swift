import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// The nightly replay as an operator runs it: the log keeps what was sent for `--retain`, an
/// archive keeps it after that, and `replay` / `stats --rebuild` read both. The real binary and
/// the Campaign emulator.
@Suite("Retention and archives from the command line", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct RetentionArchiveCommandTests {
    /// `count` tracking hits (hit i: delivery `r100 + i % 5`, action by `i % 3`) in 4 KiB segments.
    static func ingested(_ count: Int, binary: String) async throws -> String {
        let directory = temporaryDirectory("retention-cli")
        try await ingestedHits(count, binary: binary, directory: directory) { "r\(100 + $0 % 5)" }
        return directory
    }

    static func segments(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".wal") }.sorted()
    }

    /// The URIs the emulator received, sorted (the lanes send in parallel).
    static func receivedURIs(_ emulator: RunningEmulator) async -> [String] {
        await emulator.emulator.recorder.lastRequests(100_000).map(\.uri).sorted()
    }

    @Test("by default a drained log keeps its segments (a day): replay --from 1 --to 100 re-sends those 100 the morning after")
    func defaultRetentionKeepsTheDay() async throws {
        let binary = try RelayBinary.path()
        let directory = try await Self.ingested(8000, binary: binary)
        defer { removeTree(directory) }
        let before = Self.segments("\(directory)/wal")
        #expect(before.count >= 5, "\(before)")
        let emulator = try await RunningEmulator.start()
        let upload = try await RelayBinary.run(binary, ["upload", "--until-drained", "--tracking-host", emulator.url, "--data-dir", directory])
        #expect(upload.status == 0, "\(upload.stderr)")
        let aggregate = try await RelayBinary.run(binary, ["aggregate", "--data-dir", directory])
        #expect(aggregate.status == 0, "\(aggregate.stderr)")
        #expect(Self.segments("\(directory)/wal") == before, "every consumer passed them, and they stay for the day")
        await emulator.emulator.recorder.reset()
        let replay = try await RelayBinary.run(
            binary, ["replay", "--from", "1", "--to", "100", "--tracking-host", emulator.url, "--data-dir", directory, "--json"])
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
        #expect(await emulator.emulator.recorder.acceptedHits == 100)
        // --retain 0 on the next consumer run lets them go at once.
        let again = try await RelayBinary.run(
            binary, ["upload", "--until-drained", "--retain", "0", "--tracking-host", emulator.url, "--data-dir", directory])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(Self.segments("\(directory)/wal") == [before[before.count - 1]], "only the active segment stays")
        await emulator.stop()
    }

    @Test("--retain-bytes keeps only the newest passed segments that fit, and the log says why the others went")
    func retainBytes() async throws {
        let binary = try RelayBinary.path()
        let directory = try await Self.ingested(8000, binary: binary)
        defer { removeTree(directory) }
        let before = Self.segments("\(directory)/wal")
        let emulator = try await RunningEmulator.start()
        let upload = try await RelayBinary.run(
            binary, ["upload", "--until-drained", "--retain-bytes", "10000", "--tracking-host", emulator.url, "--data-dir", directory])
        #expect(upload.status == 0, "\(upload.stderr)")
        let after = Self.segments("\(directory)/wal")
        // The quota counts segment headers and frames, not the active segment's preallocated zeros.
        let verify = try await RelayBinary.run(binary, ["wal", "verify", "--json", "--data-dir", directory])
        let bytes = ((try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any])?["bytes"] as? Int) ?? -1
        #expect(after == Array(before.suffix(after.count)), "the newest stay: \(after) of \(before)")
        #expect(after.count < before.count && bytes <= 10000, "\(after.count) segments, \(bytes) bytes")
        #expect(upload.stderr.contains("the log needed room"), "the log line says why: \(upload.stderr)")
        await emulator.stop()
    }

    @Test(
        "--archive-dir: segments leaving the log land in the archive intact (wal verify clean); replay --from-archive re-sends them byte for byte; stats --rebuild --from-archive counts them"
    )
    func archive() async throws {
        let binary = try RelayBinary.path()
        let count = 8000
        let directory = try await Self.ingested(count, binary: binary)
        defer { removeTree(directory) }
        let archive = temporaryDirectory("retention-archive")
        defer { removeTree(archive) }
        let before = Self.segments("\(directory)/wal")
        // Both consumers run: the aggregator first, with the default retention (a day), then the
        // uploader with none, whose passing lets every sealed segment go, into the archive.
        let aggregate = try await RelayBinary.run(binary, ["aggregate", "--data-dir", directory])
        #expect(aggregate.status == 0, "\(aggregate.stderr)")
        #expect(Self.segments("\(directory)/wal") == before, "kept for the day")
        let first = try await RunningEmulator.start()
        let upload = try await RelayBinary.run(
            binary,
            ["upload", "--until-drained", "--retain", "0", "--archive-dir", archive, "--tracking-host", first.url, "--data-dir", directory])
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(Self.segments("\(directory)/wal") == [before[before.count - 1]], "the log keeps its active segment only")
        #expect(Self.segments(archive) == Array(before.dropLast()), "every other segment is in the archive")
        for name in Self.segments(archive) {
            // The log's copy is gone, so compare with what the archive verifies to: frames, CRCs.
            #expect(!FileManager.default.fileExists(atPath: "\(directory)/wal/\(name)"))
        }
        let verify = try await RelayBinary.run(binary, ["wal", "verify", "--archive", archive, "--json"])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any]
        #expect(report?["firstSequence"] as? Int == 1 && report?["corruptFrames"] as? Int == 0, "\(verify.stdout)")

        // Without the archive, the range is gone; with it, it is all there.
        let second = try await RunningEmulator.start()
        let gone = try await RelayBinary.run(
            binary, ["replay", "--from", "1", "--to", "\(count)", "--tracking-host", second.url, "--data-dir", directory])
        #expect(gone.status == 2, "most of the range is no longer in the log: \(gone.stderr)")
        await second.emulator.recorder.reset()
        let replay = try await RelayBinary.run(
            binary,
            [
                "replay", "--from", "1", "--to", "\(count)", "--from-archive", archive, "--tracking-host", second.url, "--data-dir", directory,
                "--json",
            ])
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
        let beyond = try await RelayBinary.run(
            binary, ["replay", "--from", "9000", "--to", "9100", "--from-archive", archive, "--tracking-host", second.url, "--data-dir", directory])
        #expect(
            beyond.status == 1
                && beyond.stderr.contains(
                    "sequences 9000 to 9100 are not in the log and the archive: the log and the archive keep sequences 1 to \(count)"),
            "\(beyond.stderr)")
        let sent = await Self.receivedURIs(first)
        #expect(sent.count == count)
        #expect(await Self.receivedURIs(second) == sent, "the replay from the archive sends the same requests, byte for byte")

        // Counts rebuilt from the archive and the log equal the counts kept as the events came.
        let counted = try await RelayBinary.run(binary, ["stats", "--json", "--no-catch-up", "--data-dir", directory])
        let refused = try await RelayBinary.run(binary, ["stats", "--rebuild", "--json", "--data-dir", directory])
        #expect(refused.status == 1 && refused.stderr.contains("now starts at"), "without the archive: \(refused.stderr)")
        let rebuilt = try await RelayBinary.run(binary, ["stats", "--rebuild", "--from-archive", archive, "--json", "--data-dir", directory])
        #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
        #expect(Self.withoutTimes(rebuilt.stdout) == Self.withoutTimes(counted.stdout), "\(rebuilt.stdout)\n\(counted.stdout)")

        // --to-aggregates counts a range into a side database: the same per-delivery counts.
        let side = "\(archive)-side.sqlite"
        defer { removeTree(side) }
        let recount = try await RelayBinary.run(
            binary,
            ["replay", "--from", "1", "--to", "\(count)", "--from-archive", archive, "--to-aggregates", side, "--json", "--data-dir", directory])
        #expect(recount.status == 0, "\(recount.stderr)")
        let deliveries = { (text: String) -> [[String: Int]] in
            let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
            return ((object?["deliveries"] as? [[String: Any]]) ?? []).map { delivery in
                delivery.compactMapValues { $0 as? Int }.merging(["id": (delivery["deliveryId"] as? String).map { Int($0.dropFirst()) ?? -1 } ?? -1])
                { a, _ in a }
            }.sorted { ($0["id"] ?? 0) < ($1["id"] ?? 0) }
        }
        #expect(deliveries(recount.stdout).count == 5)
        #expect(deliveries(recount.stdout) == deliveries(counted.stdout), "\(recount.stdout)")
        await first.stop()
        await second.stop()
    }

    @Test(
        "a directory given as --archive-dir is made when ingest or serve starts; erase against serve's succeeds before anything was archived; a directory never given is refused"
    )
    func archiveDirectoryMadeAtStart() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("archive-made")
        defer { removeTree(directory) }
        let ingest = try await RelayBinary.run(
            binary, ["ingest", "--data-dir", "\(directory)/ingest", "--archive-dir", "\(directory)/ingest-archive", "-"],
            input: Data(#"{"kind":"track","action":"open","messageId":"1","deliveryId":"d1"}"#.utf8))
        #expect(ingest.status == 0, "\(ingest.stderr)")
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: "\(directory)/ingest-archive", isDirectory: &isDirectory) && isDirectory.boolValue)

        let token = "an-admin-token-0123456789"
        let archive = "\(directory)/archive"
        let server = try ChildProcess(
            binary, ["serve", "--data-dir", "\(directory)/data", "--archive-dir", archive, "--bind", "127.0.0.1:0", "--admin-token", token])
        defer { server.stopWithoutWaiting() }
        _ = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        #expect(FileManager.default.fileExists(atPath: archive), "serve made its archive directory")
        let erase = try await RelayBinary.run(
            binary, ["erase", "--user-key", "ada", "--archive-dir", archive, "--data-dir", "\(directory)/data", "--admin-token", token])
        #expect(erase.status == 0, "\(erase.stdout) \(erase.stderr)")
        let typo = try await RelayBinary.run(
            binary, ["erase", "--user-key", "ada", "--archive-dir", "\(directory)/archiv", "--data-dir", "\(directory)/data", "--admin-token", token])
        #expect(typo.status == 1 && typo.stderr.contains("no archive at \(directory)/archiv"), "\(typo.status) \(typo.stderr)")
        // Another archive than the server's is this process's to erase, which it cannot while the server runs.
        try FileManager.default.createDirectory(atPath: "\(directory)/other", withIntermediateDirectories: true)
        let other = try await RelayBinary.run(
            binary, ["erase", "--user-key", "ada", "--archive-dir", "\(directory)/other", "--data-dir", "\(directory)/data", "--admin-token", token])
        #expect(
            other.status == 1 && other.stderr.contains("holds the log and erases from its own --archive-dir, ")
                && other.stderr.contains(": stop it to erase from \(directory)/other too"), "\(other.status) \(other.stderr)")
        await server.stop()
    }

    @Test("wal archive --to copies sealed segments on demand, skips what the archive holds, and refuses another relay's file of the same name")
    func archiveOnDemand() async throws {
        let binary = try RelayBinary.path()
        let directory = try await Self.ingested(8000, binary: binary)
        defer { removeTree(directory) }
        let archive = temporaryDirectory("wal-archive")
        defer { removeTree(archive) }
        let before = Self.segments("\(directory)/wal")
        let run = try await RelayBinary.run(binary, ["wal", "archive", "--to", archive, "--json", "--data-dir", directory])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(report?["copied"] as? [String] == Array(before.dropLast()), "\(run.stdout)")
        #expect(Self.segments("\(directory)/wal") == before, "the log is not changed")
        for name in before.dropLast() {
            #expect(FileManager.default.contents(atPath: "\(archive)/\(name)") == FileManager.default.contents(atPath: "\(directory)/wal/\(name)"))
        }
        let again = try await RelayBinary.run(binary, ["wal", "archive", "--to", archive, "--json", "--data-dir", directory])
        let second = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
        #expect(second?["copied"] as? [String] == [] && second?["alreadyArchived"] as? [String] == Array(before.dropLast()), "\(again.stdout)")
        let past = try await RelayBinary.run(
            binary, ["wal", "archive", "--to", "\(archive)-past", "--before", "2020-01-01T00:00:00Z", "--json", "--data-dir", directory])
        #expect((try JSONSerialization.jsonObject(with: Data(past.stdout.utf8)) as? [String: Any])?["copied"] as? [String] == [], "\(past.stdout)")
        removeTree("\(archive)-past")
        // Another relay's segment under the same name is never overwritten.
        try Data("another relay".utf8).write(to: URL(fileURLWithPath: "\(archive)/\(before[0])"))
        let conflict = try await RelayBinary.run(binary, ["wal", "archive", "--to", archive, "--data-dir", directory])
        #expect(conflict.status == 1 && conflict.stderr.contains("already holds a different \(before[0])"), "\(conflict.stderr)")
    }

    /// Stats JSON without the fields that carry the time of the run.
    static func withoutTimes(_ text: String) -> String {
        text.replacing(/"(updatedAt|lastActivity|firstActivity|generatedAt)":"[^"]*"/, with: "")
    }
}

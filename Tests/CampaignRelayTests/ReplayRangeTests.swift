import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// `replay` never sends nothing in silence: a range no longer in the log is an error naming what
/// the log keeps, a partial range says what is missing, and `--dry-run` counts what would go.
/// The real binary, on a log whose first segments were deleted once the uploader passed them.
@Suite("Replay of ranges the log no longer holds", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct ReplayRangeTests {
    /// A data directory of `count` tracking hits (hit i at sequence i: delivery `f1000 + i % 7`,
    /// action by `i % 3`) in 4 KiB segments, forwarded to an emulator so that the uploader's
    /// passing deletes the older segments. Returns the directory, the emulator and the first
    /// sequence the log still keeps.
    static func drainedLog(_ count: Int) async throws -> (directory: String, emulator: RunningEmulator, first: Int, binary: String) {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("replay-range")
        try await ingestedHits(count, binary: binary, directory: directory) { "f\(1000 + $0 % 7)" }
        let emulator = try await RunningEmulator.start()
        // --retain 0: segments go as soon as the uploader has passed them (by default a day is kept).
        let upload = try await RelayBinary.run(
            binary, ["upload", "--until-drained", "--retain", "0", "--tracking-host", emulator.url, "--data-dir", directory])
        #expect(upload.status == 0, "\(upload.stderr)")
        let verify = try await RelayBinary.run(binary, ["wal", "verify", "--json", "--data-dir", directory])
        let report = try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any]
        let first = try #require(report?["firstSequence"] as? Int, "\(verify.stdout)")
        try #require(first > 100 && first < count, "the uploader's passing deleted the first segments: the log starts at \(first)")
        #expect(report?["firstEventTime"] as? String == "2026-11-21T00:00:00.000Z", "wal verify names the kept range's first time")
        return (directory, emulator, first, binary)
    }

    @Test("a range wholly deleted: exit 1 naming the range the log keeps, nothing sent; a range by time with no event: exit 1")
    func wholeRangeGone() async throws {
        let (directory, emulator, first, binary) = try await Self.drainedLog(5000)
        defer { removeTree(directory) }
        let before = await emulator.emulator.recorder.acceptedHits
        let run = try await RelayBinary.run(
            binary, ["replay", "--from", "1", "--to", "100", "--tracking-host", emulator.url, "--data-dir", directory])
        #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
        #expect(
            run.stderr.contains("Error: nothing replayed: sequences 1 to 100 are no longer in the log: the log keeps sequences \(first) to 5000"),
            "\(run.stderr)")
        #expect(await emulator.emulator.recorder.acceptedHits == before, "nothing was sent")
        let byTime = try await RelayBinary.run(
            binary,
            ["replay", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z", "--tracking-host", emulator.url, "--data-dir", directory])
        #expect(byTime.status == 1, "\(byTime.stdout) \(byTime.stderr)")
        #expect(byTime.stderr.contains("no event of the range for tracking was found; the log keeps sequences \(first) to 5000"), "\(byTime.stderr)")
        let empty = temporaryDirectory("replay-empty")
        defer { removeTree(empty) }
        _ = try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", empty], input: Data())
        let nothing = try await RelayBinary.run(binary, ["replay", "--from", "1", "--tracking-host", emulator.url, "--data-dir", empty])
        #expect(nothing.status == 1 && nothing.stderr.contains("the log holds no event"), "\(nothing.stderr)")
        await emulator.stop()
    }

    @Test("a range partly deleted: the part kept is replayed, the missing part is named (text and --json), exit 2")
    func partialRange() async throws {
        let (directory, emulator, first, binary) = try await Self.drainedLog(5000)
        defer { removeTree(directory) }
        let run = try await RelayBinary.run(
            binary, ["replay", "--from", "1", "--to", "5100", "--tracking-host", emulator.url, "--data-dir", directory, "--json"])
        #expect(run.status == 2, "\(run.stdout) \(run.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(summary?["delivered"] as? Int == 5000 - first + 1, "\(run.stdout)")
        let missing = summary?["missing"] as? [String] ?? []
        #expect(missing.count == 2, "\(missing)")
        #expect(missing.first?.hasPrefix("sequences 1 to \(first - 1) are no longer in the log") == true, "\(missing)")
        #expect(missing.last == "sequences 5001 to 5100 are not in the log (it ends at 5000)", "\(missing)")
        await emulator.stop()
    }

    @Test("--dry-run sends nothing and its counts per host and per delivery equal an independent count of the range")
    func dryRunCounts() async throws {
        let (directory, emulator, first, binary) = try await Self.drainedLog(5000)
        defer { removeTree(directory) }
        let before = await emulator.emulator.recorder.acceptedHits
        let from = first + 10
        let to = 4995
        try #require(from < to, "the log keeps \(first) to 5000")
        let run = try await RelayBinary.run(
            binary, ["replay", "--from", "\(from)", "--to", "\(to)", "--dry-run", "--json", "--tracking-host", emulator.url, "--data-dir", directory])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(await emulator.emulator.recorder.acceptedHits == before, "a dry run sends nothing")
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
        #expect((counts["tracking"] as? [String: Any])?["events"] as? Int == to - from + 1)
        #expect((counts["tracking"] as? [String: Any])?["url"] as? String == emulator.url)
        #expect((counts["marketing"] as? [String: Any])?["events"] as? Int == 0)
        // The independent count: hit i went to delivery f(1000 + i % 7) as action i % 3.
        var expected: [String: [Int]] = [:]
        for index in from...to { expected["f\(1000 + index % 7)", default: [0, 0, 0]][index % 3] += 1 }
        let deliveries = counts["deliveries"] as? [[String: Any]] ?? []
        #expect(deliveries.count == 7)
        for delivery in deliveries {
            let id = delivery["deliveryId"] as? String ?? ""
            let got = [delivery["impressions"] as? Int ?? -1, delivery["opens"] as? Int ?? -1, delivery["clicks"] as? Int ?? -1]
            #expect(got == expected[id], "\(id): \(got) against \(expected[id] ?? [])")
        }
        await emulator.stop()
    }
}

import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `erase --user-key` killed with SIGKILL around the span where its plan exists, her two
/// registrations in two segments (with the helpers of ``ErasureCommandTests``): the old state or
/// the new one, never between, and the next run finishes an erasure the kill cut short.
@Suite("Erasing a person under kill -9", .serialized, .timeLimit(.minutes(10)), .tier(.thorough), .seedInFailures)
struct ErasureKillTests {
    /// Rounds: at least `rounds`, then more until `midErasureFloor` of them cut an erasure short,
    /// at most `maximumRounds` (a loaded machine lands fewer kills inside the erasure's span).
    static let rounds = 24
    static let maximumRounds = 72
    static let midErasureFloor = 6
    /// What `erase` logs right after its plan is durable.
    static let planWritten = "erasing a person's registrations"
    /// What a later run logs when it finishes an erasure a stop cut short.
    static let finishingCutShort = "finishing an erasure a stop cut short"
    /// Hits stored between her two registrations (about 16 bytes each in a frame): with 4 KiB
    /// segments and 1 KiB commits, her registrations land in two segments, each rewritten on its own.
    static let filler = (1...300).map { #"{"kind":"track","action":"impression","messageId":"\#(60_000 + $0)","deliveryId":"d2"}"# }

    enum Outcome: String {
        case old
        case midErasure = "mid-erasure"
        case new, mixed
    }

    /// The first sequence numbers of the segments of `directory`'s log.
    static func segmentStarts(_ directory: String) throws -> [UInt64] {
        try FileManager.default.contentsOfDirectory(atPath: directory + "/wal").filter { $0.hasSuffix(".wal") }.compactMap {
            UInt64($0.dropLast(4))
        }.sorted()
    }

    /// Waits until `child` has logged `line` (checking every millisecond), or has exited; whether it logged it.
    static func logged(_ line: String, by child: ChildProcess) async throws -> Bool {
        let guardTime = ContinuousClock.now + .seconds(240)
        while !child.text.contains(line) {
            guard child.process.isRunning else { return child.text.contains(line) }
            guard ContinuousClock.now < guardTime else {
                Issue.record("\(child.process.arguments) logged no \(line) in 240 s: \(child.text)")
                return false
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    @Test("kill -9 of erase --user-key around its plan: the old state or the new one, never between; the next run finishes it")
    func killNineLoop() async throws {
        let binary = try RelayBinary.path()
        let template = try await ErasureCommandTests.prepared(
            "kill-template", ingestOptions: ["--segment-bytes", "4096", "--batch-bytes", "1024"], between: Self.filler)
        defer { try? FileManager.default.removeItem(atPath: template) }
        let untouched = try await ErasureCommandTests.dump(template)
        let hers = untouched.enumerated().filter { $0.element.contains(#""userKey":"pdcanaryadauser""#) }.map { UInt64($0.offset + 1) }
        let starts = try Self.segmentStarts(template)
        let segment = { (sequence: UInt64) in starts.last { $0 <= sequence } }
        try #require(hers.count == 2 && segment(hers[0]) != segment(hers[1]), "her registrations \(hers) in two segments of \(starts)")
        #expect(untouched.enumerated().allSatisfy { $0.element.hasPrefix(#"{"seq":\#($0.offset + 1),"#) })
        var erased = untouched
        for sequence in hers { erased[Int(sequence) - 1] = #"{"seq":\#(sequence),"kind":"erased"}"# }
        let countsBefore = try await ErasureCommandTests.registrations(template)
        #expect(countsBefore == ["android": [2, 2], "ios": [2, 2]])

        // A timed run: when the plan is written (the line logged right after it) and the exit,
        // from the start.
        let timed = template + "-timed"
        defer { try? FileManager.default.removeItem(atPath: timed) }
        try FileManager.default.copyItem(atPath: template, toPath: timed)
        let started = ContinuousClock.now
        let whole = try ChildProcess(binary, ["erase", "--data-dir", timed, "--user-key", "pdcanaryadauser"])
        #expect(try await Self.logged(Self.planWritten, by: whole), "\(whole.text)")
        let planAt = max(1, Int((ContinuousClock.now - started) / .milliseconds(1)))
        await whole.process.exited()
        let afterPlan = max(2, Int((ContinuousClock.now - started) / .milliseconds(1)) - planAt)
        #expect(whole.process.terminationStatus == 0, "\(whole.text)")
        print("erase kill -9: the plan is written at \(planAt) ms, the run exits \(afterPlan) ms later")

        var generator = SeededGenerator(seed: TestSeed.make(for: "erase kill -9"))
        var outcomes: [Outcome: Int] = [:]
        var round = 0
        while round < Self.rounds || (outcomes[.midErasure, default: 0] < Self.midErasureFloor && round < Self.maximumRounds) {
            defer { round += 1 }
            let directory = template + "-\(round)"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try FileManager.default.copyItem(atPath: template, toPath: directory)
            let eraser = try ChildProcess(binary, ["erase", "--data-dir", directory, "--user-key", "pdcanaryadauser"])
            if Int.random(in: 0..<4, using: &generator) == 0 {
                // Before the plan is written, or about then.
                try await Task.sleep(for: .milliseconds(Int.random(in: planAt / 2...planAt, using: &generator)))
                kill(eraser.process.processIdentifier, SIGKILL)
            } else {
                // Once it is: anywhere in the rest of the run. Watched and killed from a thread of
                // its own, so that a busy cooperative pool does not delay the kill past the span.
                let pause = UInt32(Int.random(in: 0...afterPlan * 1000, using: &generator))
                let seen = try await onThreadOfItsOwn { () -> Bool in
                    let deadline = Date().addingTimeInterval(240)
                    while !eraser.text.contains(Self.planWritten), eraser.process.isRunning, Date() < deadline { usleep(100) }
                    usleep(pause)
                    kill(eraser.process.processIdentifier, SIGKILL)
                    return eraser.text.contains(Self.planWritten)
                }
                #expect(seen, "round \(round): \(eraser.process.arguments) logged no \(Self.planWritten): \(eraser.text)")
            }
            _ = await eraser.exit(within: 30)
            // Any erase finishes an erasure cut short before its own (a dry run of no one here).
            let finishing = try await RelayBinary.run(
                binary, ["erase", "--data-dir", directory, "--registration-token", "nobody", "--dry-run"], seconds: 120)
            #expect(finishing.status == 0, "\(finishing.stderr)")
            let dump = try await ErasureCommandTests.dump(directory)
            // The audit log's lines (docs/privacy.md), read as a script would.
            let audit = (try? String(contentsOfFile: directory + "/erasures.jsonl", encoding: .utf8)) ?? ""
            let records = try audit.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
            let counts = try await ErasureCommandTests.registrations(directory)
            let erasedOfHers = hers.filter { dump.count >= Int($0) && dump[Int($0) - 1] == erased[Int($0) - 1] }.count
            let outcome: Outcome =
                erasedOfHers != 0 && erasedOfHers != hers.count
                ? .mixed
                : finishing.stderr.contains(Self.finishingCutShort) ? .midErasure : records.isEmpty ? .old : .new
            outcomes[outcome, default: 0] += 1
            switch outcome {
            case .mixed:
                Issue.record("round \(round): \(erasedOfHers) of her \(hers.count) registrations erased: \(dump)")
            case .old:
                #expect(dump == untouched, "round \(round): no record, so nothing erased")
                #expect(counts == countsBefore, "round \(round)")
            case .midErasure, .new:
                #expect(records.count == 1 && records.first?["registrations"] as? Int == 2, "round \(round) (\(outcome)): \(records)")
                #expect(dump == erased, "round \(round) (\(outcome))")
                #expect(counts == ["android": [1, 1], "ios": [1, 1]], "round \(round) (\(outcome))")
                #expect(ErasureCommandTests.adaCanaries(directory).isEmpty, "round \(round) (\(outcome))")
            }
            #expect(!(try FileManager.default.contentsOfDirectory(atPath: directory + "/wal")).contains { $0.hasSuffix(".plan") }, "round \(round)")
        }
        let summary = outcomes.map { "\($0.key.rawValue) \($0.value)" }.sorted().joined(separator: ", ")
        print("erase kill loop: \(summary)")
        // Not vacuous: kills cut erasures short after their plans.
        #expect(outcomes[.midErasure, default: 0] >= Self.midErasureFloor, "\(summary) in \(round) rounds")
    }
}

import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real `campaign-relay upload --until-drained` child process, SIGKILLed while it drains a
/// backlog to the emulator. After restarts nothing is lost, and duplicates stay within the bound
/// the uploader states: at most `--max-unsynced` events per kill.
@Suite("kill -9 of a real uploading process", .serialized, .timeLimit(.minutes(10)), .tier(.thorough), .seedInFailures)
struct UploaderKillTests {
    static let events = 20_000
    static let cycles = 6
    static let maxUnsynced = 512

    @Test("nothing is lost and duplicates stay within --max-unsynced per kill")
    func killCycles() async throws {
        let binary = try RelayBinary.path()
        let running = try await RunningEmulator.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("upkill-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var text = ""
        for id in 1...Self.events { text += #"{"kind":"track","action":"impression","messageId":"\#(id)","deliveryId":"d\#(id % 5)"}"# + "\n" }
        let ingest = try await RelayBinary.run(
            binary, ["ingest", "-", "--data-dir", directory, "--json", "--batch-bytes", "65536"], input: Data(text.utf8))
        try #require(ingest.status == 0, "\(ingest.stderr)")

        let arguments = [
            "upload", "--until-drained", "--data-dir", directory, "--tracking-host", running.url, "--max-unsynced", String(Self.maxUnsynced),
            "--log-level", "error", "--json",
        ]
        var generator = SeededGenerator(seed: TestSeed.make(for: "upload kill -9 cycles"))
        var killedWhileRunning = 0
        for _ in 0..<Self.cycles {
            let before = await running.emulator.recorder.distinctHits
            let remaining = Self.events - before
            let target = before + max(1, remaining * Int(10 + generator.next() % 21) / 100)
            let child = try SpawnedProcess(binary, arguments)
            let deadline = Date().addingTimeInterval(60)
            while child.isRunning, Date() < deadline, await running.emulator.recorder.distinctHits < target {
                try await Task.sleep(for: .milliseconds(2))
            }
            try await Task.sleep(for: .milliseconds(Int(generator.next() % 5)))
            if child.isRunning { killedWhileRunning += 1 }
            kill(child.processIdentifier, SIGKILL)
            await child.exited()
        }
        let finish = try await RelayBinary.run(binary, arguments)
        #expect(finish.status == 0, "\(finish.stderr)")
        let recorder = running.emulator.recorder
        let distinct = await recorder.distinctHits
        let accepted = await recorder.acceptedHits
        #expect(distinct == Self.events, "every event must arrive")
        #expect(accepted - distinct <= Self.cycles * Self.maxUnsynced, "\(accepted - distinct) duplicates exceed the bound")
        #expect(killedWhileRunning >= Self.cycles - 1, "the kills must land while the uploader drains")
        let expectedIds = Set((1...Self.events).map { String($0, radix: 16) })
        #expect(Set(await recorder.hits.keys.map(\.messageId)) == expectedIds)
        print("uploader kill test: \(Self.cycles) kills, \(accepted - distinct) duplicate hits (bound \(Self.cycles * Self.maxUnsynced))")
        await running.stop()
    }
}

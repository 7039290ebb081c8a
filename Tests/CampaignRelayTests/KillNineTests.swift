import Foundation
import RelayCore
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real `campaign-relay ingest` child process, killed with SIGKILL at random moments while it
/// ingests at full speed. After each kill the relay is restarted on the same data directory, and
/// every event it had acknowledged (printed with `--acks`) must be in the log, exactly once.
@Suite("kill -9 of a real ingesting process", .serialized, .timeLimit(.minutes(10)), .tier(.thorough), .seedInFailures)
struct KillNineTests {
    static let cycles = 24
    static let eventsPerCycle = 12_000

    struct Ack: Decodable {
        struct Body: Decodable {
            var lines: [Int]
            var sequences: [UInt64]
        }
        var ack: Body
    }

    @Test("every acknowledged event survives SIGKILL, exactly once")
    func killCycles() async throws {
        let binary = try RelayBinary.path()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kill9-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let seed = TestSeed.make(for: "ingest kill -9 cycles")
        var generator = SeededGenerator(seed: seed)
        var acknowledged: [UInt64: Int64] = [:]
        var attempted = Set<Int64>()
        var nextId: Int64 = 1
        var killedWhileRunning = 0
        var verifiedUpTo: UInt64 = 1

        for cycle in 0..<Self.cycles {
            // A file of unique events: line i carries id firstId + i - 1.
            let firstId = nextId
            var text = ""
            for offset in 0..<Int64(Self.eventsPerCycle) {
                text += #"{"kind":"track","action":"open","messageId":"\#(firstId + offset)","deliveryId":"d\#(cycle)"}"# + "\n"
                attempted.insert(firstId + offset)
            }
            nextId += Int64(Self.eventsPerCycle)
            let input = "\(directory)-cycle.jsonl"
            try text.write(toFile: input, atomically: true, encoding: .utf8)

            let child = try SpawnedProcess(
                binary, ["ingest", input, "--data-dir", directory, "--acks", "--batch-bytes", "32768", "--json", "--log-level", "error"],
                output: .pipe)
            // Kill after a random number of acknowledged batches (a file makes about 40), then a
            // random 0 to 3 ms more: in a write, an fdatasync, a segment roll or between them. The
            // pipe is read and the moment waited for on a thread of its own.
            let acksBeforeKill = Int(generator.next() % 28)
            let pause = UInt32(generator.next() % 3_000)
            let descriptor = try #require(child.standardOutput)
            let (output, killedRunning) = try await onThreadOfItsOwn { () -> (Data, Bool) in
                defer { close(descriptor) }
                var output = Data()
                while output.count(where: { $0 == UInt8(ascii: "\n") }) < acksBeforeKill {
                    guard let chunk = readChunk(descriptor) else { break }
                    output.append(contentsOf: chunk)
                }
                usleep(pause)
                let running = child.isRunning
                kill(child.processIdentifier, SIGKILL)
                child.waitUntilExit()
                readPipe(descriptor) { output.append(contentsOf: $0) }
                return (output, running)
            }
            if killedRunning { killedWhileRunning += 1 }

            for line in output.split(separator: UInt8(ascii: "\n")) {
                guard let ack = try? JSONDecoder().decode(Ack.self, from: Data(line)) else { continue }
                let (firstLine, lastLine) = (ack.ack.lines[0], ack.ack.lines[1])
                #expect(lastLine - firstLine == Int(ack.ack.sequences[1] - ack.ack.sequences[0]))
                for lineNumber in firstLine...lastLine {
                    let sequence = ack.ack.sequences[0] + UInt64(lineNumber - firstLine)
                    #expect(acknowledged[sequence] == nil, "cycle \(cycle): sequence \(sequence) acknowledged twice")
                    acknowledged[sequence] = firstId + Int64(lineNumber - 1)
                }
            }

            // Restart: opening the log recovers it (an empty ingest opens, recovers and closes).
            let restart = try await RelayBinary.run(binary, ["ingest", "/dev/null", "--data-dir", directory, "--json", "--log-level", "error"])
            #expect(restart.status == 0, "cycle \(cycle): restart failed: \(restart.stderr)")
            let from = cycle == Self.cycles - 1 ? 1 : verifiedUpTo
            verifiedUpTo = try await verify(
                binary, directory, from: from, acknowledged: acknowledged, attempted: attempted, label: "seed \(seed) cycle \(cycle)")
        }
        #expect(killedWhileRunning >= Self.cycles * 3 / 4, "most kills must land while the child is ingesting")
        #expect(acknowledged.count > Self.eventsPerCycle, "the children must have acknowledged events before being killed")
    }

    /// Checks the log from `from` on: sequences increase, no event twice, nothing invented, every
    /// acknowledged event present. Returns the sequence after the last event.
    func verify(_ binary: String, _ directory: String, from: UInt64, acknowledged: [UInt64: Int64], attempted: Set<Int64>, label: String)
        async throws -> UInt64
    {
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", directory, "--from", String(from)])
        #expect(dump.status == 0, "\(label): dump failed: \(dump.stderr)")
        var seen = Set<Int64>()
        var present: [UInt64: Int64] = [:]
        var previous: UInt64 = 0
        for line in dump.stdout.split(separator: "\n") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let sequence = (object["seq"] as? NSNumber)?.uint64Value,
                let text = object["messageId"] as? String, let id = Int64(text)
            else {
                Issue.record("\(label): unreadable dump line \(line)")
                continue
            }
            #expect(sequence > previous, "\(label): sequence \(sequence) after \(previous)")
            previous = sequence
            #expect(seen.insert(id).inserted, "\(label): event \(id) twice")
            #expect(attempted.contains(id), "\(label): event \(id) was never sent")
            present[sequence] = id
        }
        for (sequence, id) in acknowledged where sequence >= from {
            #expect(present[sequence] == id, "\(label): acknowledged event \(id) at sequence \(sequence) missing")
        }
        return previous + 1
    }
}

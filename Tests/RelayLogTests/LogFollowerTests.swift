import RelayCore
import RelayIO
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog

/// The log follower (one read loop for every consumer) and the read-only snapshot of the offline
/// commands, on a log in the simulated file system.
@Suite("Log follower and snapshot", .tier(.fast))
struct LogFollowerTests {
    @Test("catching up: every event once, in order, in batches of at most the size; the saved cursor ends past the last batch handled")
    func catchUpSavesTheCursor() async throws {
        let log = try await WriteAheadLog.open(
            dataDirectory: "/follow", consumers: [.cursorFile("reader")], fileSystem: SimulatedFileSystem(), logger: quietLogger)
        for batch in 0..<3 { _ = try await log.append((1...10).map { TestEvents.tracking(Int64(batch * 10) + $0) }) }
        let follower = LogFollower(
            log: log, from: 1, batchSize: 4, mode: .catchUp, cursor: .saves("reader"), readAhead: BlockingExecutor(name: "follow-test"))
        var sequences: [UInt64] = []
        var cursors: [UInt64?] = []
        for try await batch in follower {
            #expect(batch.events.count <= 4)
            #expect(batch.from == (sequences.last ?? 0) + 1)
            sequences += batch.events.map(\.sequence)
            cursors.append(await log.cursorPosition("reader"))
        }
        #expect(sequences == Array(1...30))
        #expect(cursors.first == 1, "the cursor stays until the consumer asks for the batch after")
        #expect(await log.cursorPosition("reader") == 31)
        await log.close()
    }

    /// What the following task has read.
    actor Seen {
        var sequences: [UInt64] = []
        func add(_ more: [UInt64]) { sequences += more }
    }

    @Test("following: the follower waits at the durable end for events appended later, and ends when the log closes")
    func followWaitsForNewEvents() async throws {
        let log = try await WriteAheadLog.open(dataDirectory: "/tail", fileSystem: SimulatedFileSystem(), logger: quietLogger)
        let follower = LogFollower(log: log, from: 1, batchSize: 100, mode: .follow, readAhead: BlockingExecutor(name: "follow-test"))
        let seen = Seen()
        let reading = Task {
            for try await batch in follower { await seen.add(batch.events.map(\.sequence)) }
            return true
        }
        _ = try await log.append((1...5).map { TestEvents.tracking($0) })
        try await waitFor("the follower to read the first five events", seconds: 10) { await seen.sequences.count == 5 }
        _ = try await log.append((6...9).map { TestEvents.tracking($0) })
        try await waitFor("the follower to read the four appended once it was at the end", seconds: 10) { await seen.sequences.count == 9 }
        await log.close()
        #expect(try await reading.value, "the sequence ends with the log")
        #expect(await seen.sequences == Array(1...9))
    }

    @Test("a snapshot reads the events the files held when it was taken, none appended after")
    func snapshotStopsAtItsEnd() async throws {
        let fileSystem = SimulatedFileSystem()
        let log = try await WriteAheadLog.open(dataDirectory: "/snap", fileSystem: fileSystem, logger: quietLogger)
        _ = try await log.append((1...10).map { TestEvents.tracking($0) })
        let snapshot = try LogSnapshot.take(walDirectory: "/snap/wal", fileSystem: fileSystem)
        _ = try await log.append((11...15).map { TestEvents.tracking($0) })
        #expect(snapshot.extent.lastSequence == 10)
        #expect(snapshot.end == 11)
        var sequences: [UInt64] = []
        try snapshot.read(from: 1, maximumEvents: 3) { batch in
            sequences += batch.events.map(\.sequence)
            return true
        }
        #expect(sequences == Array(1...10))
        await log.close()
    }
}

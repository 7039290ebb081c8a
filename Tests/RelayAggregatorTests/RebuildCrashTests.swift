import Logging
import RelayAggregator
import RelayCore
import RelayLog
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `stats --rebuild` killed at each of its file operations in turn: whatever the crash leaves, the
/// relay starts again on its own and its counts are exact.
@Suite("Aggregator rebuild under crashes", .tier(.fast))
struct RebuildCrashTests {
    /// How the data directory looks before the rebuild.
    enum Previous: String, CaseIterable, CustomTestStringConvertible {
        /// Readable aggregates that have counted the first half of the log.
        case readable
        /// Garbage where the database was: the rebuild must move it into quarantine.
        case unreadable

        var testDescription: String { rawValue }
    }

    @Test("a rebuild killed at any file operation leaves aggregates that a restart counts exactly", arguments: Previous.allCases)
    func crashAtEveryStep(previous: Previous) async throws {
        let events = try MixedEvents.make(count: 1200, seed: 21)
        var expected = ExpectedCounts()
        expected.add(events)
        var crashPoints: [String] = []
        var completed = false
        var crashAt = 1
        while !completed {
            #expect(crashAt <= 30, "the rebuild should finish within 30 file operations")
            guard crashAt <= 30 else { break }
            let directory = temporaryDirectory("rebuild-crash")
            defer { removeTree(directory) }
            let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [Aggregator.consumer], logger: quietLogger)
            _ = try await log.append(Array(events[..<600]))
            let path = Aggregator.databasePath(dataDirectory: directory)
            switch previous {
            case .readable:
                let aggregator = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
                _ = try await aggregator.catchUp()
                await aggregator.close()
            case .unreadable:
                let file = try PosixFileSystem().open(path, create: true)
                try file.write(Array(repeating: 0xAB, count: 8192), at: 0)
                file.close()
            }
            _ = try await log.append(Array(events[600...]))
            // What an earlier rebuild that died while building leaves behind.
            let leftover = try PosixFileSystem().open(path + ".rebuild", create: true)
            try leftover.write(Array("half a database".utf8), at: 0)
            leftover.close()

            let fileSystem = FailingFileSystem()
            fileSystem.crash(afterOperations: crashAt)
            do {
                _ = try await Aggregator.rebuild(log: log, dataDirectory: directory, fileSystem: fileSystem, logger: quietLogger)
                completed = true
                #expect(fileSystem.crashPoint == nil)
            } catch {
                guard case .files(let failure) = error else { throw error }
                crashPoints.append(try #require(fileSystem.crashPoint))
                #expect(failure.reason == "simulated crash: the process is gone")
            }

            // The restart: serve opens the aggregates, or (if they are still the garbage the rebuild
            // did not get to move) the operator's next `stats --rebuild` does, with nothing to repair by hand.
            let counted: Int
            do {
                let aggregator = try await Aggregator(log: log, dataDirectory: directory, logger: quietLogger)
                counted = try await aggregator.catchUp().events
                await aggregator.close()
            } catch {
                guard case .unreadableDatabase = error else { throw error }
                #expect(previous == .unreadable && !completed, "only garbage the rebuild never replaced may stay unreadable")
                counted = try await Aggregator.rebuild(log: log, dataDirectory: directory, logger: quietLogger).events
            }
            let queries = try await AggregateQueries(path: path)
            let difference = expected.difference(from: try await queries.deliveries(), try await queries.registrations())
            #expect(difference == nil, "crash at operation \(crashAt) (\(crashPoints.last ?? "none")): \(difference ?? "")")
            #expect(counted <= 1200)
            if previous == .unreadable, completed {
                let kept = try PosixFileSystem().listDirectory("\(directory)/quarantine")
                #expect(kept.count == 1 && kept[0].hasPrefix("aggregates.sqlite."))
            }
            await log.close()
            crashAt += 1
        }
        // Every file operation of the rebuild took a crash: the leftover side file's removal, the
        // previous journal's (readable) or the quarantine (garbage), the rename into place, the
        // directory sync. Paths are shown by their last component.
        let steps = crashPoints.map { point in
            point.split(separator: " ").map { $0.split(separator: "/").last.map(String.init) ?? String($0) }.joined(separator: " ")
        }
        let expectedSteps =
            switch previous {
            case .readable:
                [
                    "unlink aggregates.sqlite.rebuild", "unlink aggregates.sqlite-wal", "unlink aggregates.sqlite-shm",
                    "rename aggregates.sqlite.rebuild -> aggregates.sqlite",
                ]
            case .unreadable:
                [
                    "unlink aggregates.sqlite.rebuild", "mkdir quarantine", "rename aggregates.sqlite -> ",
                    "rename aggregates.sqlite.rebuild -> aggregates.sqlite",
                ]
            }
        #expect(steps.count == expectedSteps.count + 1, "\(steps)")
        for (step, expectedStep) in zip(steps, expectedSteps) { #expect(step.hasPrefix(expectedStep), "\(steps)") }
        #expect(steps.last?.hasPrefix("fsync rebuild-crash-") == true, "\(steps)")
    }
}

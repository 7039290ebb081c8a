import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// The README's table of I/O threads, read from `/proc` of a real `serve`: every blocking owner
/// has its thread, by name, and background work runs niced.
@Suite("The I/O boundary of a real server", .timeLimit(.minutes(10)), .tier(.fast))
struct IOBoundaryTests {
    /// Name and nice value of every thread of `pid`.
    static func threads(of pid: Int32) throws -> [(name: String, nice: Int)] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").compactMap { task in
            let name = try String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let stat = try String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8)
            // After the command in parentheses: field 3 is the state, field 19 the nice value.
            guard let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 16, let nice = Int(fields[16]) else { return nil }
            return (name, nice)
        }
    }

    @Test("serve runs the log, the stores, the aggregator and the upload lanes on threads of their own; aggregation and forwarding niced")
    func threadsOfTheBoundary() async throws {
        let binary = try RelayBinary.path()
        let emulator = try await RunningEmulator.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("threads-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try ChildProcess(
            binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--tracking-host", emulator.url, "--marketing-host", emulator.url]
        )
        _ = try await child.await(#"address=127\.0\.0\.1:(\d+)"#)
        let pid = child.process.processIdentifier
        let expected: [(String, Int)] = [
            ("wal-writer", 0), ("wal-cursors", 0), ("sqlite-forward", 0), ("sqlite-idempot", 0), ("idempotency-log", 0),
            ("aggregator", 5), ("aggregator-read", 5), ("lane-tracking", 5), ("lane-marketing", 5), ("proc-sampler", 5), ("server-record", 0),
        ]
        // A thread takes its name when it starts running, which a busy machine can delay.
        var threads: [(name: String, nice: Int)] = []
        try await waitUntil("every thread of the table to start", seconds: 30) {
            threads = (try? Self.threads(of: pid)) ?? []
            return expected.allSatisfy { name, _ in threads.contains { $0.name == name } }
        }
        let byName = Dictionary(threads.map { ($0.name, $0.nice) }, uniquingKeysWith: max)
        for (name, nice) in expected {
            #expect(byName[name] == nice, "thread \(name): nice \(byName[name].map(String.init) ?? "missing"); threads: \(threads)")
        }
        // The uploader's connections run on an event loop of their own, niced too.
        #expect(threads.contains { $0.name.hasPrefix("NIO-ELT") && $0.nice == 5 }, "\(threads)")
        await child.stop()
        await emulator.stop()
    }
}

import RelayCore
import Synchronization

@testable import RelayLog

/// A log segment whose frame area is the input (behind a valid segment header), as a crash, a bad
/// disk or a hostile copy may leave it. `wal verify`, the reader and recovery must all finish on it
/// (libFuzzer's time and memory limits catch loops and unbounded allocations), and:
/// - the reader returns events in ascending sequence order, no more than `wal verify` counts;
/// - recovery leaves no torn tail, keeps every event `wal verify` counted, and a second recovery
///   finds nothing more to cut.
enum WALSegmentTarget {
    static let walDirectory = "/data/wal"

    static func run(_ bytes: [UInt8]) throws(FuzzFinding) {
        let fileSystem = MemoryFileSystem()
        let segment = "\(walDirectory)/\(SegmentHeader.fileName(firstSequence: 1))"
        do {
            try fileSystem.createDirectory("/data")
            try fileSystem.createDirectory(walDirectory)
            let handle = try fileSystem.open(segment, create: true)
            try handle.write(SegmentHeader(firstSequence: 1, createdAtNanoseconds: 0).encoded() + bytes, at: 0)
        } catch {
            throw FuzzFinding(.walSegment, "the in-memory file system failed: \(error)")
        }
        let before = try verify(fileSystem, "before recovery")

        var reader = LogReader(walDirectory: walDirectory, fileSystem: fileSystem, from: 1)
        var read: [UInt64] = []
        while true {
            let batch: LogReadBatch
            do { batch = try reader.read(maximumEvents: 4096) } catch { throw FuzzFinding(.walSegment, "the reader failed: \(error)") }
            if batch.events.isEmpty { break }
            read += batch.events.map(\.sequence)
            try require(read.count <= before.events, .walSegment, "the reader returned \(read.count) events; wal verify counts \(before.events)")
        }
        try require(zip(read, read.dropFirst()).allSatisfy { $0 < $1 }, .walSegment, "the reader's sequences do not ascend: \(read.prefix(50))")

        let first = try recover(fileSystem)
        let after = try verify(fileSystem, "after recovery")
        try require(after.tornTails == 0, .walSegment, "a torn tail is left after recovery: \(after.damage)")
        try require(after.events == before.events, .walSegment, "recovery changed the events from \(before.events) to \(after.events)")
        try require(
            first.nextSequence >= (before.lastSequence ?? 0) + 1, .walSegment,
            "next sequence \(first.nextSequence) after \(String(describing: before.lastSequence))")
        let second = try recover(fileSystem)
        try require(second.truncatedBytes == 0, .walSegment, "a second recovery cut \(second.truncatedBytes) more bytes")
        try require(second.nextSequence == first.nextSequence, .walSegment, "next sequence \(first.nextSequence), then \(second.nextSequence)")
    }

    static func verify(_ fileSystem: MemoryFileSystem, _ when: String) throws(FuzzFinding) -> LogVerifier.Report {
        do { return try LogVerifier.verify(walDirectory: walDirectory, fileSystem: fileSystem) } catch {
            throw FuzzFinding(.walSegment, "wal verify failed \(when): \(error)")
        }
    }

    static func recover(_ fileSystem: MemoryFileSystem) throws(FuzzFinding) -> RecoveryReport {
        do {
            let (_, report) = try LogRecovery.recover(
                fileSystem: fileSystem, walDirectory: walDirectory, quarantine: Quarantine(directory: "/data/quarantine", fileSystem: fileSystem),
                configuration: LogConfiguration(), sequenceFloor: 1, now: "2026-11-22T00:00:00Z")
            return report
        } catch {
            throw FuzzFinding(.walSegment, "recovery failed: \(error)")
        }
    }
}

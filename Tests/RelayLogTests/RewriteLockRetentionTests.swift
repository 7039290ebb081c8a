import RelayCore
import RelayTestSupport
import Synchronization
import TestTiers
import Testing

@testable import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// The real file system, counting the attempts to take `wal/REWRITE` that found it held: the sign
/// that the retention is waiting for a rewrite (`wal rekey`, an erasure) to give the lock up.
final class RewriteLockWatchingFileSystem: FileSystem {
    let base = PosixFileSystem()
    private let refusals = Mutex(0)

    /// Attempts to take `wal/REWRITE` refused because another holder has it.
    var refusedRewriteLocks: Int { refusals.withLock { $0 } }

    func lockExclusively(_ path: String) throws(FileSystemError) -> (any RelayLog.FileHandle)? {
        do {
            return try base.lockExclusively(path)
        } catch {
            if path.hasSuffix("/REWRITE"), error.errno == LogLayout.lockHeldErrno { refusals.withLock { $0 += 1 } }
            throw error
        }
    }

    func createDirectory(_ path: String) throws(FileSystemError) { try base.createDirectory(path) }
    func listDirectory(_ path: String) throws(FileSystemError) -> [String] { try base.listDirectory(path) }
    func exists(_ path: String) -> Bool { base.exists(path) }
    func open(_ path: String, create: Bool) throws(FileSystemError) -> any RelayLog.FileHandle { try base.open(path, create: create) }
    func openForAppending(_ path: String, mode: UInt32) throws(FileSystemError) -> any RelayLog.FileHandle {
        try base.openForAppending(path, mode: mode)
    }
    func rename(_ source: String, to destination: String) throws(FileSystemError) { try base.rename(source, to: destination) }
    func remove(_ path: String) throws(FileSystemError) { try base.remove(path) }
    func synchronizeDirectory(_ path: String) throws(FileSystemError) { try base.synchronizeDirectory(path) }
    func fileIdentity(_ path: String) throws(FileSystemError) -> FileIdentity { try base.fileIdentity(path) }
}

/// `wal/REWRITE` against the retention, on the real file system (a simulated one has no locks):
/// while a rewrite holds the lock, a segment every consumer has passed stays in the log, and
/// once the rewrite lets go, it leaves.
@Suite("The rewrite lock holds the retention back", .timeLimit(.minutes(2)), .tier(.fast))
struct RewriteLockRetentionTests {
    @Test(
        "while wal/REWRITE is held, a cursor commit past sealed segments deletes none of them (the retention waits for the lock); released, they go")
    func retentionWaitsForTheRewriteLock() async throws {
        let directory = temporaryDirectory("rewrite-lock-retention")
        defer { removeTree(directory) }
        let walDirectory = "\(directory)/wal"
        let fileSystem = RewriteLockWatchingFileSystem()
        let configuration = LogConfiguration(
            segmentBytes: 4096, compressionLevel: 0, preallocateSegments: false, retention: .none)
        let log = try await WriteAheadLog.open(dataDirectory: directory, configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
        _ = try await log.registerCursor("reader")
        // 100 commits of 10 uncompressed events: a few sealed 4 KiB segments before the active one.
        for commit in 0..<100 { _ = try await log.append((1...10).map { TestEvents.tracking(Int64(commit * 10 + $0)) }) }
        func segments() throws -> [String] { try PosixFileSystem().listDirectory(walDirectory).filter { $0.hasSuffix(".wal") }.sorted() }
        let before = try segments()
        try #require(before.count >= 3, "sealed segments to pass: \(before)")
        let end = await log.durableSequence

        // A rewrite (wal rekey, an erasure) holds the lock: a descriptor of its own, as another process's.
        let rewrite = try #require(try PosixFileSystem().lockExclusively("\(walDirectory)/REWRITE"))
        let committed = Flag()
        let commit = Task {
            try await log.commitCursor("reader", to: end)
            committed.set()
        }
        // What happens first: the retention finds the lock held, or the commit (and its retention
        // pass) is done. A hang guard only, never a pace.
        let deadline = ContinuousClock.now + .seconds(60)
        while fileSystem.refusedRewriteLocks == 0, !committed.isSet, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(
            try segments() == before,
            "a segment left the log while wal/REWRITE was held (the retention \(fileSystem.refusedRewriteLocks == 0 ? "never asked for the lock" : "asked for it"))"
        )
        #expect(fileSystem.refusedRewriteLocks > 0, "the retention must wait for the rewrite lock")

        // The rewrite lets go: the waiting pass takes the lock and deletes every passed segment.
        rewrite.close()
        try await commit.value
        #expect(try segments() == [before[before.count - 1]], "only the active segment stays once every segment before it is passed")
        await log.close()
    }
}

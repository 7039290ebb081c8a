import Logging
import RelayCore
import RelayIO

extension SegmentFileStore {
    /// Takes the log's lock, makes the archive directory, reads the cursors, recovers the segments
    /// (torn tails cut back, damage kept in the quarantine), checks the keys against the frames
    /// (``LogKeyCheck``) and establishes the relay identity, all on the writer's thread.
    ///
    /// - Throws: ``LogError/locked(path:)`` when another process has the log open, or
    ///   ``LogError/fileSystem(_:context:)`` when the directory cannot be read or repaired.
    static func open(
        layout: LogLayout, configuration: LogConfiguration, fileSystem: any FileSystem, logger: Logger, decodedEventsKept: Int,
        wallClock: @escaping @Sendable () -> Int64
    ) async throws(LogError) -> OpenedFrameStore {
        // Opening reads and repairs files: that happens on the writer's thread, like every later write.
        let io = BlockingExecutor(name: "wal-writer")
        let lock = try await lockLog(layout: layout, fileSystem: fileSystem, wait: configuration.lockWait, io: io)
        if let archive = configuration.archiveDirectory {
            // Made at once, not when the first segment leaves: an erasure or a replay pointed at
            // this archive before anything was archived finds the directory it was told of.
            do {
                try await io.run { () throws(FileSystemError) in try fileSystem.createDirectory(archive) }
            } catch {
                lock?.close()
                throw .fileSystem(error, context: "creating the archive directory \(archive) (--archive-dir)")
            }
        }
        let now = EventTime.now().rfc3339
        let quarantine = Quarantine(directory: layout.quarantineDirectory, fileSystem: fileSystem)
        let cursors = CursorStore(directory: layout.cursorDirectory, fileSystem: fileSystem, quarantine: quarantine)
        let recovered: ([String: UInt64], SegmentWriter, RecoveryReport, RelayIdentity, RelayIdentity.Change)
        do {
            recovered = try await recover(
                layout: layout, configuration: configuration, fileSystem: fileSystem, quarantine: quarantine, cursors: cursors, now: now,
                wallClock: wallClock, io: io)
        } catch {
            lock?.close()
            throw error
        }
        let (positions, writer, report, identity, change) = recovered
        let erasures = await io.run { ErasureMask.pending(walDirectory: layout.walDirectory, fileSystem: fileSystem) }
        let store = SegmentFileStore(
            writer: writer, durableEnd: report.nextSequence, lock: lock, executor: io, walDirectory: layout.walDirectory,
            configuration: configuration, sharedDecoder: SharedFrameDecoder(capacity: decodedEventsKept, logger: logger), erasureMask: erasures)
        return OpenedFrameStore(
            store: store, positions: positions, cursors: FileCursorKeeper(cursors: cursors), report: report, identity: identity, change: change,
            erasures: erasures, extent: extent(of: writer, durableEnd: report.nextSequence), sharedDecoder: store.sharedDecoder)
    }

    /// Reads the cursors, recovers the segments, checks the keys against the frames
    /// (``LogKeyCheck``) and establishes the relay identity, on the writer's thread.
    private static func recover(
        layout: LogLayout, configuration: LogConfiguration, fileSystem: any FileSystem, quarantine: Quarantine, cursors: CursorStore, now: String,
        wallClock: @escaping @Sendable () -> Int64, io: BlockingExecutor
    ) async throws(LogError) -> ([String: UInt64], SegmentWriter, RecoveryReport, RelayIdentity, RelayIdentity.Change) {
        try await io.run { () throws(LogError) -> ([String: UInt64], SegmentWriter, RecoveryReport, RelayIdentity, RelayIdentity.Change) in
            let positions = try cursors.loadAll(now: now)
            let (writer, report) = try LogRecovery.recover(
                fileSystem: fileSystem, walDirectory: layout.walDirectory, quarantine: quarantine, configuration: configuration,
                sequenceFloor: positions.values.max() ?? 1, now: now, wallClock: wallClock
            )
            // Before anything is appended or the identity moves to a new epoch: a key file that does not
            // fit the log changes nothing.
            do throws(LogError) {
                try LogKeyCheck.check(walDirectory: layout.walDirectory, fileSystem: fileSystem, keys: configuration.encryption)
            } catch {
                var unused = writer
                unused.close()
                throw error
            }
            let (identity, change) = try RelayIdentity.establish(
                layout: layout, fileSystem: fileSystem, quarantine: quarantine, nextSequence: report.nextSequence, now: now
            )
            return (positions, writer, report, identity, change)
        }
    }

    /// Takes the log's lock file, trying again every few milliseconds for up to `wait` while
    /// someone else holds it (see ``LogConfiguration/lockWait`` for who that can be).
    private static func lockLog(
        layout: LogLayout, fileSystem: any FileSystem, wait: Duration, io: BlockingExecutor
    ) async throws(LogError) -> (any FileHandle)? {
        let deadline = ContinuousClock.now.advanced(by: wait)
        while true {
            do {
                return try await io.run { () throws(FileSystemError) -> (any FileHandle)? in
                    try fileSystem.createDirectory(layout.walDirectory)
                    return try fileSystem.lockExclusively(layout.lockFile)
                }
            } catch {
                guard error.errno == LogLayout.lockHeldErrno else {
                    throw .fileSystem(error, context: "opening the log directory")
                }
                guard ContinuousClock.now < deadline, !Task.isCancelled else { throw .locked(path: layout.lockFile) }
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

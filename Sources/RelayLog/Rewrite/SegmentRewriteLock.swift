#if canImport(Glibc)
    import Glibc
#endif

/// `<data-dir>/wal/REWRITE`, held (flock) while a segment file is rewritten in place (`wal rekey`)
/// and while the log's retention archives and deletes a segment: a segment deleted by a running
/// server while `wal rekey` rewrites it must not come back under its name when the rewrite is
/// renamed into place, and an archive copy must not race a rewrite of the same name.
///
/// Both sides hold it for one segment at a time, so each waits at most one segment's rewrite or
/// removal (well under a second for a 64 MiB segment).
struct SegmentRewriteLock {
    /// How long a side waits for the other before it gives up for now.
    static let patience: Duration = .seconds(30)

    /// Runs `body` holding the lock of the log in `walDirectory`, waiting for it up to ``patience``.
    ///
    /// - Throws: ``LogError/fileSystem(_:context:)`` when the lock cannot be had, or what `body` throws.
    static func holding<T>(walDirectory: String, fileSystem: any FileSystem, _ body: () throws(LogError) -> T) throws(LogError) -> T {
        let path = "\(walDirectory)/REWRITE"
        let deadline = ContinuousClock.now + patience
        var held: (any FileHandle)?
        var acquired = false
        while !acquired {
            do {
                held = try fileSystem.lockExclusively(path)
                acquired = true
            } catch  where error.errno == LogLayout.lockHeldErrno && ContinuousClock.now < deadline {
                usleep(5_000)
            } catch {
                throw .fileSystem(error, context: "waiting for \(path), held while a segment is rewritten (wal rekey) or removed (retention)")
            }
        }
        defer { held?.close() }
        return try body()
    }
}

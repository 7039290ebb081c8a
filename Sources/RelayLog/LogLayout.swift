#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the log's files live under a data directory.
public struct LogLayout: Sendable, Hashable {
    /// The data directory (`--data-dir`).
    public var dataDirectory: String
    /// `<data-dir>/wal`: the segments.
    public var walDirectory: String { "\(dataDirectory)/wal" }
    /// `<data-dir>/wal/cursors`: one file per consumer.
    public var cursorDirectory: String { "\(walDirectory)/cursors" }
    /// `<data-dir>/quarantine`: copies of damaged bytes with notes.
    public var quarantineDirectory: String { "\(dataDirectory)/quarantine" }
    /// `<data-dir>/identity.json`: the relay id and epochs (``RelayIdentity``).
    public var identityFile: String { "\(dataDirectory)/identity.json" }
    /// `<data-dir>/wal/LOCK`: held (flock) by the process that writes the log.
    public var lockFile: String { "\(walDirectory)/LOCK" }

    /// The layout under `dataDirectory`.
    public init(dataDirectory: String) {
        self.dataDirectory = dataDirectory
    }

    /// The `errno` of ``FileSystem/lockExclusively(_:)`` when another process holds the lock.
    public static let lockHeldErrno = EWOULDBLOCK
    static let noSuchFileErrno = ENOENT
    /// A full disk, or a full quota of the file system's user.
    static let noSpaceErrnos: Set<Int32> = [ENOSPC, EDQUOT]
}

package import Logging

/// A log read where it is kept by a command that has not opened it (`replay`, `wal dump`,
/// `replay --to-aggregates`): segment files in a directory (with an archive's), or a relay's
/// stream in PostgreSQL (RelayPostgres makes that one). Reading takes no lock, repairs nothing
/// and deletes nothing, so it works beside a running server; every read may block, so run it on
/// a thread made for blocking calls.
public struct StoredLog: Sendable {
    /// Where the events are read from, for messages: "the log", "the log and the archive",
    /// "stream edge-1 in PostgreSQL".
    public let source: String
    /// Whether ``source`` names more than one place ("keep" rather than "keeps").
    public let plural: Bool
    private let makeReader: @Sendable (UInt64, Logger?) -> any FrameReader
    private let readExtent: @Sendable () throws(LogError) -> LogExtent

    /// A stored log from its parts: a reader factory (from a sequence number, with a logger for
    /// the damage passed over) and what reads its extent.
    package init(
        source: String, plural: Bool = false, reader: @escaping @Sendable (UInt64, Logger?) -> any FrameReader,
        extent: @escaping @Sendable () throws(LogError) -> LogExtent
    ) {
        self.source = source
        self.plural = plural
        self.makeReader = reader
        self.readExtent = extent
    }

    /// The log files in `walDirectory`, with `archiveDirectory`'s segments filling in those the
    /// log no longer has; `keys` open encrypted frames.
    public static func files(
        walDirectory: String, archiveDirectory: String? = nil, fileSystem: any FileSystem = PosixFileSystem(), keys: LogKeyRing? = nil
    ) -> StoredLog {
        StoredLog(
            source: archiveDirectory == nil ? "the log" : "the log and the archive", plural: archiveDirectory != nil,
            reader: { position, damageLogger in
                LogReader(
                    walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem, from: position, keys: keys,
                    damageLogger: damageLogger)
            },
            extent: { () throws(LogError) in
                try LogExtent.read(walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem, keys: keys)
            })
    }

    /// What the log holds now: its first and last sequence numbers and the time of its first event.
    ///
    /// - Throws: ``LogError`` when the log cannot be read, or its first frame is encrypted with a
    ///   key the reader lacks.
    public func extent() throws(LogError) -> LogExtent {
        try readExtent()
    }

    /// Steps through the log from `position`; with a `damageLogger`, each damage passed over is
    /// logged there too.
    package func steps(from position: UInt64, damageLogger: Logger? = nil) -> LogFollower.Steps {
        LogFollower.Steps(reader: makeReader(position, damageLogger))
    }
}

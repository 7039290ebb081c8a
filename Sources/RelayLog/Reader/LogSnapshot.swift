import RelayCore

/// A read-only view of a log's files for the commands that do not open the log (`wal dump`,
/// `wal verify`, `replay`, `stats --rebuild`): it takes no lock, repairs nothing and deletes
/// nothing, so it works beside a running server.
///
/// Taking a snapshot reads the log's extent (``LogExtent``) once; its readers stop at the end
/// found then (``end``), so a command sees one consistent stretch of the log however long it
/// runs, and never a frame a running writer had not finished when the snapshot was taken. Every
/// read goes through the file layer; call ``take(walDirectory:archiveDirectory:fileSystem:keys:)``
/// and read on a thread made for blocking calls.
public struct LogSnapshot: Sendable {
    /// The log directory.
    public let walDirectory: String
    /// An archive whose segments fill in those the log no longer has.
    public let archiveDirectory: String?
    /// The keys that open encrypted frames.
    public let keys: LogKeyRing?
    /// What the files held when the snapshot was taken.
    public let extent: LogExtent
    let fileSystem: any FileSystem

    /// The sequence after the last event the snapshot holds: its readers read below it.
    public var end: UInt64 { extent.lastSequence.map { $0 + 1 } ?? (extent.firstSequence ?? 1) }

    /// Takes a snapshot of the log in `walDirectory` (with `archiveDirectory`'s segments).
    ///
    /// - Throws: ``LogError`` when the directory or a segment cannot be read, or the first frame is
    ///   encrypted with a key `keys` lack.
    public static func take(
        walDirectory: String, archiveDirectory: String? = nil, fileSystem: any FileSystem = PosixFileSystem(), keys: LogKeyRing? = nil
    ) throws(LogError) -> LogSnapshot {
        let extent = try LogExtent.read(walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem, keys: keys)
        return LogSnapshot(walDirectory: walDirectory, archiveDirectory: archiveDirectory, keys: keys, extent: extent, fileSystem: fileSystem)
    }

    /// The events from `position` up to ``end``, `maximumEvents` at a time, handed to `body` in
    /// order with the damage passed over in each batch; `body` returns `false` to stop.
    ///
    /// - Throws: ``LogError`` when the log cannot be read past a point (damage is not an error).
    public func read(
        from position: UInt64, maximumEvents: Int = 4096, _ body: (LogReadBatch) throws(LogError) -> Bool
    ) throws(LogError) {
        var reader = LogReader(
            walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem, from: position, keys: keys)
        defer { reader.close() }
        var last = reader.position
        while reader.position < end {
            let batch = try reader.read(maximumEvents: max(1, maximumEvents), below: end)
            guard !batch.events.isEmpty || !batch.damage.isEmpty else { return }
            guard try body(batch) else { return }
            // Damage alone that moved nothing: nothing more to read below the end.
            if batch.events.isEmpty, reader.position <= last { return }
            last = reader.position
        }
    }
}

public import RelayLog
public import RelaySQLite

/// Why the aggregator could not do its work. None of these changes the log.
public enum AggregatorError: Error, Sendable, CustomStringConvertible {
    /// The database file exists but is not a usable aggregates database.
    case unreadableDatabase(path: String, SQLiteError)
    /// The database was written by another schema version.
    case schemaMismatch(path: String, found: Int64, expected: Int64)
    /// The log no longer holds events the aggregates need (they were deleted after every
    /// consumer passed them), so counts rebuilt from it would be incomplete.
    case logTrimmed(path: String, needed: UInt64, oldest: UInt64)
    /// Another aggregator moved the position while this one was working.
    case positionMoved(expected: UInt64, found: UInt64)
    /// A database operation failed.
    case database(SQLiteError)
    /// Reading the log failed.
    case log(LogError)
    /// A rebuild `--from-archive` whose archive ends before the log starts: the events in
    /// between are in neither, so the counts would silently miss them.
    case archiveGap(archive: String, archiveEnd: UInt64, logStart: UInt64)
    /// A file operation of a rebuild failed (removing a leftover side file, moving a damaged
    /// database into quarantine, renaming the rebuilt database into place).
    case files(FileSystemError)

    public var description: String {
        switch self {
        case .unreadableDatabase(let path, let error):
            "\(path) is not a readable aggregates database (\(error.message)); the log is untouched: run `campaign-relay stats --rebuild` to rebuild it from the log (the damaged file is kept in quarantine/)"
        case .schemaMismatch(let path, let found, let expected):
            "\(path) has schema version \(found), this relay uses \(expected): run `campaign-relay stats --rebuild` to rebuild it from the log"
        case .logTrimmed(let path, let needed, let oldest):
            "\(path) needs events from sequence \(needed), but the log now starts at \(oldest) (older segments were deleted once every consumer had passed them); `campaign-relay stats --rebuild --allow-partial` rebuilds counts from \(oldest) on"
        case .positionMoved(let expected, let found):
            "another aggregator moved the position from \(expected) to \(found); run one aggregator per data directory"
        case .database(let error):
            "aggregates database: \(error)"
        case .log(let error):
            "reading the log: \(error)"
        case .archiveGap(let archive, let end, let start):
            "the archive \(archive) ends at sequence \(end) but the log starts at \(start): sequences \(end + 1) to \(start - 1) are in neither, so nothing was rebuilt; archive the missing segments (wal archive, --archive-dir) or rebuild without --from-archive"
        case .files(let error):
            "rebuilding the aggregates: \(error); the previous aggregates (if any) are still in place: fix the cause and run `campaign-relay stats --rebuild` again"
        }
    }
}

import RelayIO
import RelayLog

/// The check every command reading an archive (`replay --from-archive`, `stats --rebuild
/// --from-archive`, `wal verify --archive`) makes first: a mistyped directory is an error that
/// says so, not an archive that holds nothing.
enum ArchiveDirectoryCheck {
    /// Throws unless `path` exists (looked up off the cooperative pool).
    static func requireExisting(_ path: String) async throws(RuntimeFailure) {
        guard await BlockingExecutor(name: "archive-check").run({ PosixFileSystem().exists(path) }) else {
            throw RuntimeFailure("no archive at \(path): give the directory of --archive-dir or `wal archive --to`")
        }
    }
}

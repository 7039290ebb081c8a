import RelayIO

/// Cursors in files (`<data-dir>/wal/cursors/<name>.cursor`, ``CursorStore``), written on a thread
/// of their own so that a cursor commit never waits behind a group commit.
struct FileCursorKeeper: CursorKeeper {
    /// The cursor files.
    let cursors: CursorStore
    /// The thread that writes cursors.
    private let io = BlockingExecutor(name: "wal-cursors")

    init(cursors: CursorStore) {
        self.cursors = cursors
    }

    func write(_ name: String, position: UInt64) async throws(LogError) {
        let store = cursors
        do {
            try await io.run { () throws(FileSystemError) in try store.write(name, position: position) }
        } catch {
            throw .fileSystem(error, context: "writing cursor \(name)")
        }
    }

    func read(_ name: String) async throws(LogError) -> UInt64? { nil }

    func remove(_ name: String) async throws(LogError) {
        let (fileSystem, path) = (cursors.fileSystem, cursors.path(name))
        do {
            try await io.run { () throws(FileSystemError) in try fileSystem.remove(path) }
        } catch {
            guard error.errno == LogLayout.noSuchFileErrno else { throw .fileSystem(error, context: "removing cursor \(name)") }
        }
    }
}

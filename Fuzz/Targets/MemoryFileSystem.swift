import NIOConcurrencyHelpers
import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// A plain in-memory file system for the log's fuzz target: files are byte arrays, nothing ever
/// fails, and there is no crash model (the simulated one of the tests models power loss; here only
/// the bytes matter, and a million runs must each cost microseconds).
final class MemoryFileSystem: FileSystem {
    struct State {
        var files: [String: [UInt8]] = [:]
        var directories: Set<String> = ["/"]
    }

    let state = NIOLockedValueBox(State())

    func createDirectory(_ path: String) throws(FileSystemError) {
        state.withLockedValue { _ = $0.directories.insert(path) }
    }

    func listDirectory(_ path: String) throws(FileSystemError) -> [String] {
        let prefix = path.hasSuffix("/") ? path : path + "/"
        let names = state.withLockedValue { state -> [String]? in
            guard state.directories.contains(path) else { return nil }
            return state.files.keys.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        }
        guard let names else { throw Self.missing("opendir", path) }
        return names.filter { !$0.contains("/") }
    }

    func exists(_ path: String) -> Bool {
        state.withLockedValue { $0.files[path] != nil || $0.directories.contains(path) }
    }

    func open(_ path: String, create: Bool) throws(FileSystemError) -> any FileHandle {
        let found = state.withLockedValue { state -> Bool in
            if state.files[path] == nil, create { state.files[path] = [] }
            return state.files[path] != nil
        }
        guard found else { throw Self.missing("open", path) }
        return MemoryFileHandle(fileSystem: self, path: path)
    }

    /// ``open(_:create:)`` creating the file: memory has no permissions, and a caller appending
    /// writes at the file's size.
    func openForAppending(_ path: String, mode: UInt32) throws(FileSystemError) -> any FileHandle { try open(path, create: true) }

    func rename(_ source: String, to destination: String) throws(FileSystemError) {
        let moved = state.withLockedValue { state -> Bool in
            guard let bytes = state.files.removeValue(forKey: source) else { return false }
            state.files[destination] = bytes
            return true
        }
        guard moved else { throw Self.missing("rename", source) }
    }

    func remove(_ path: String) throws(FileSystemError) {
        guard state.withLockedValue({ $0.files.removeValue(forKey: path) }) != nil else { throw Self.missing("unlink", path) }
    }

    func synchronizeDirectory(_ path: String) throws(FileSystemError) {}

    func lockExclusively(_ path: String) throws(FileSystemError) -> (any FileHandle)? { nil }

    func fileIdentity(_ path: String) throws(FileSystemError) -> FileIdentity { FileIdentity(device: 1, inode: 1) }

    static func missing(_ operation: String, _ path: String) -> FileSystemError {
        FileSystemError(operation: operation, path: path, errno: ENOENT, reason: "no such file")
    }
}

/// A handle on one file of a ``MemoryFileSystem``.
struct MemoryFileHandle: FileHandle {
    let fileSystem: MemoryFileSystem
    let path: String

    func write(_ bytes: [UInt8], at offset: Int64) throws(FileSystemError) {
        fileSystem.state.withLockedValue { state in
            var file = state.files[path] ?? []
            let end = Int(offset) + bytes.count
            if file.count < end { file += [UInt8](repeating: 0, count: end - file.count) }
            file.replaceSubrange(Int(offset)..<end, with: bytes)
            state.files[path] = file
        }
    }

    func read(at offset: Int64, count: Int) throws(FileSystemError) -> [UInt8] {
        fileSystem.state.withLockedValue { state in
            let file = state.files[path] ?? []
            let start = min(Int(offset), file.count)
            return Array(file[start..<min(file.count, start + count)])
        }
    }

    func size() throws(FileSystemError) -> Int64 {
        fileSystem.state.withLockedValue { Int64($0.files[path]?.count ?? 0) }
    }

    func truncate(to size: Int64) throws(FileSystemError) {
        fileSystem.state.withLockedValue { state in
            var file = state.files[path] ?? []
            if file.count > Int(size) {
                file.removeSubrange(Int(size)...)
            } else {
                file += [UInt8](repeating: 0, count: Int(size) - file.count)
            }
            state.files[path] = file
        }
    }

    func synchronizeData() throws(FileSystemError) {}

    func close() {}
}

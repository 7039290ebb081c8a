#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The real file system, through POSIX calls (`pwrite`, `fdatasync`, `rename`, directory `fsync`).
public struct PosixFileSystem: FileSystem {
    /// Creates the file system accessor.
    public init() {}

    static func failure(_ operation: String, _ path: String, _ code: Int32 = errno) -> FileSystemError {
        FileSystemError(operation: operation, path: path, errno: code, reason: String(cString: strerror(code)))
    }

    public func createDirectory(_ path: String) throws(FileSystemError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component + "/"
            if mkdir(prefix, 0o755) != 0, errno != EEXIST { throw Self.failure("mkdir", prefix) }
        }
    }

    public func listDirectory(_ path: String) throws(FileSystemError) -> [String] {
        guard let directory = opendir(path) else { throw Self.failure("opendir", path) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    public func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    public func open(_ path: String, create: Bool) throws(FileSystemError) -> any FileHandle {
        let flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0)
        let descriptor = Glibc.open(path, flags, 0o644)
        guard descriptor >= 0 else { throw Self.failure("open", path) }
        return PosixFileHandle(descriptor: descriptor, path: path)
    }

    public func openForAppending(_ path: String, mode: UInt32) throws(FileSystemError) -> any FileHandle {
        // Linux's pwrite on an O_APPEND descriptor appends, whatever the offset.
        let descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, mode_t(mode))
        guard descriptor >= 0 else { throw Self.failure("open", path) }
        return PosixFileHandle(descriptor: descriptor, path: path)
    }

    public func rename(_ source: String, to destination: String) throws(FileSystemError) {
        guard Glibc.rename(source, destination) == 0 else { throw Self.failure("rename", "\(source) -> \(destination)") }
    }

    public func remove(_ path: String) throws(FileSystemError) {
        guard unlink(path) == 0 else { throw Self.failure("unlink", path) }
    }

    public func fileIdentity(_ path: String) throws(FileSystemError) -> FileIdentity {
        var info = stat()
        guard stat(path, &info) == 0 else { throw Self.failure("stat", path) }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    public func lockExclusively(_ path: String) throws(FileSystemError) -> (any FileHandle)? {
        let flags = O_RDWR | O_CLOEXEC | O_CREAT
        let descriptor = Glibc.open(path, flags, 0o644)
        guard descriptor >= 0 else { throw Self.failure("open", path) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw Self.failure("flock", path, code)
        }
        return PosixFileHandle(descriptor: descriptor, path: path, unlocksOnClose: true)
    }

    public func synchronizeDirectory(_ path: String) throws(FileSystemError) {
        let descriptor = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Self.failure("open", path) }
        defer { Glibc.close(descriptor) }
        guard fsync(descriptor) == 0 else { throw Self.failure("fsync", path) }
    }
}

/// A file descriptor; immutable after creation, so sharing it between threads is safe (the
/// kernel serialises the positional reads and writes).
final class PosixFileHandle: FileHandle {
    let descriptor: Int32
    let path: String
    /// Whether the handle holds a flock (``PosixFileSystem/lockExclusively(_:)``) that closing it
    /// releases explicitly.
    let unlocksOnClose: Bool

    init(descriptor: Int32, path: String, unlocksOnClose: Bool = false) {
        self.descriptor = descriptor
        self.path = path
        self.unlocksOnClose = unlocksOnClose
    }

    func write(_ bytes: [UInt8], at offset: Int64) throws(FileSystemError) {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return pwrite(descriptor, base + written, raw.count - written, off_t(offset) + off_t(written))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw PosixFileSystem.failure("pwrite", path)
            }
            written += result
        }
    }

    func read(at offset: Int64, count: Int) throws(FileSystemError) -> [UInt8] {
        guard count > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let result = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return pread(descriptor, base + filled, count - filled, off_t(offset) + off_t(filled))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw PosixFileSystem.failure("pread", path)
            }
            if result == 0 { break }
            filled += result
        }
        if filled < count { buffer.removeSubrange(filled...) }
        return buffer
    }

    func size() throws(FileSystemError) -> Int64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw PosixFileSystem.failure("fstat", path) }
        return Int64(info.st_size)
    }

    func truncate(to size: Int64) throws(FileSystemError) {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw PosixFileSystem.failure("ftruncate", path) }
    }

    func synchronizeData() throws(FileSystemError) {
        guard fdatasync(descriptor) == 0 else { throw PosixFileSystem.failure("fdatasync", path) }
    }

    func close() {
        // A flock belongs to the open file description, not the descriptor: a process another
        // thread is spawning at this moment holds a copy of the descriptor until its exec closes
        // it (O_CLOEXEC), and a plain close would leave the lock held that long. Under load that
        // outlasted the 500 ms an open waits for a held lock (a log closed and reopened at once
        // was refused in a CI run). LOCK_UN releases it for every copy.
        if unlocksOnClose { flock(descriptor, LOCK_UN) }
        Glibc.close(descriptor)
    }
}

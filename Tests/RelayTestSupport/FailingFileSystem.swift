public import RelayLog
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The real file system with failures switched on and off at run time: while a failure is on,
/// every call of that operation fails with its errno (EIO from fdatasync, ENOSPC from write), as
/// a failing or full disk would answer. Everything else goes to ``PosixFileSystem``.
public final class FailingFileSystem: FileSystem {
    /// Operations that can be made to fail.
    public enum Operation: Sendable, Hashable {
        case write, synchronizeData
    }

    private let base = PosixFileSystem()
    private let failures = Mutex<[Operation: Int32]>([:])

    /// A file system that fails nothing yet.
    public init() {}

    /// From now on, every `operation` fails with `errno`.
    public func fail(_ operation: Operation, errno code: Int32) {
        failures.withLock { $0[operation] = code }
    }

    /// Stops every failure.
    public func heal() {
        failures.withLock { $0 = [:] }
    }

    func check(_ operation: Operation, _ name: String, _ path: String) throws(FileSystemError) {
        guard let code = failures.withLock({ $0[operation] }) else { return }
        throw FileSystemError(operation: name, path: path, errno: code, reason: "injected \(String(cString: strerror(code)))")
    }

    public func createDirectory(_ path: String) throws(FileSystemError) { try base.createDirectory(path) }
    public func listDirectory(_ path: String) throws(FileSystemError) -> [String] { try base.listDirectory(path) }
    public func exists(_ path: String) -> Bool { base.exists(path) }
    public func open(_ path: String, create: Bool) throws(FileSystemError) -> any FileHandle {
        FailingFileHandle(base: try base.open(path, create: create), fileSystem: self)
    }
    public func rename(_ source: String, to destination: String) throws(FileSystemError) { try base.rename(source, to: destination) }
    public func remove(_ path: String) throws(FileSystemError) { try base.remove(path) }
    public func synchronizeDirectory(_ path: String) throws(FileSystemError) { try base.synchronizeDirectory(path) }
    public func lockExclusively(_ path: String) throws(FileSystemError) -> (any FileHandle)? { try base.lockExclusively(path) }
}

/// A real file handle whose writes and fdatasyncs ask ``FailingFileSystem`` first.
struct FailingFileHandle: FileHandle {
    let base: any FileHandle
    let fileSystem: FailingFileSystem

    var path: String { base.path }
    func write(_ bytes: [UInt8], at offset: Int64) throws(FileSystemError) {
        try fileSystem.check(.write, "pwrite", path)
        try base.write(bytes, at: offset)
    }
    func read(at offset: Int64, count: Int) throws(FileSystemError) -> [UInt8] { try base.read(at: offset, count: count) }
    func size() throws(FileSystemError) -> Int64 { try base.size() }
    func truncate(to size: Int64) throws(FileSystemError) { try base.truncate(to: size) }
    func synchronizeData() throws(FileSystemError) {
        try fileSystem.check(.synchronizeData, "fdatasync", path)
        try base.synchronizeData()
    }
    func close() { base.close() }
}

import NIOConcurrencyHelpers
public import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// The real file system with failures switched on and off at run time: while a failure is on,
/// every call of that operation fails with its errno (EIO from fdatasync, ENOSPC from write), as
/// a failing or full disk would answer. Everything else goes to ``PosixFileSystem``.
///
/// It can also stop the "process" at a chosen mutating call (``crash(afterOperations:)``): that
/// call and every later one fail without touching the disk, so the files are left exactly as a
/// `kill -9` at that point would leave them (what the kernel already has survives a process crash).
public final class FailingFileSystem: FileSystem {
    /// Operations that can be made to fail.
    public enum Operation: Sendable, Hashable {
        case write, synchronizeData
    }

    private let base = PosixFileSystem()
    private let failures = NIOLockedValueBox<[Operation: Int32]>([:])
    private let crash = NIOLockedValueBox<(countdown: Int?, point: String?)>((nil, nil))

    /// A file system that fails nothing yet.
    public init() {}

    /// From now on, every `operation` fails with `errno`.
    public func fail(_ operation: Operation, errno code: Int32) {
        failures.withLockedValue { $0[operation] = code }
    }

    /// Stops every failure.
    public func heal() {
        failures.withLockedValue { $0 = [:] }
    }

    /// Makes the `count`-th mutating call from now (create, rename, remove, directory sync, write,
    /// truncate, fdatasync) and every call after it fail as if the process had died there.
    public func crash(afterOperations count: Int) {
        crash.withLockedValue { $0 = (count, nil) }
    }

    /// The call the crash stopped (`"rename a -> b"`), once it has happened.
    public var crashPoint: String? { crash.withLockedValue { $0.point } }

    /// Counts a mutating call towards the crash, and fails it once the crash has happened.
    func mutating(_ name: String, _ path: String) throws(FileSystemError) {
        let crashed = crash.withLockedValue { state -> Bool in
            if state.point != nil { return true }
            guard let countdown = state.countdown else { return false }
            if countdown <= 1 {
                state.point = "\(name) \(path)"
                return true
            }
            state.countdown = countdown - 1
            return false
        }
        if crashed { throw FileSystemError(operation: name, path: path, errno: EIO, reason: "simulated crash: the process is gone") }
    }

    func check(_ operation: Operation, _ name: String, _ path: String) throws(FileSystemError) {
        guard let code = failures.withLockedValue({ $0[operation] }) else { return }
        throw FileSystemError(operation: name, path: path, errno: code, reason: "injected \(String(cString: strerror(code)))")
    }

    public func createDirectory(_ path: String) throws(FileSystemError) {
        try mutating("mkdir", path)
        try base.createDirectory(path)
    }
    public func listDirectory(_ path: String) throws(FileSystemError) -> [String] { try base.listDirectory(path) }
    public func exists(_ path: String) -> Bool { base.exists(path) }
    public func open(_ path: String, create: Bool) throws(FileSystemError) -> any FileHandle {
        if create, !base.exists(path) { try mutating("create", path) }
        return FailingFileHandle(base: try base.open(path, create: create), fileSystem: self)
    }
    public func openForAppending(_ path: String, mode: UInt32) throws(FileSystemError) -> any FileHandle {
        if !base.exists(path) { try mutating("create", path) }
        return FailingFileHandle(base: try base.openForAppending(path, mode: mode), fileSystem: self)
    }
    public func rename(_ source: String, to destination: String) throws(FileSystemError) {
        try mutating("rename", "\(source) -> \(destination)")
        try base.rename(source, to: destination)
    }
    public func remove(_ path: String) throws(FileSystemError) {
        try mutating("unlink", path)
        try base.remove(path)
    }
    public func synchronizeDirectory(_ path: String) throws(FileSystemError) {
        try mutating("fsync", path)
        try base.synchronizeDirectory(path)
    }
    public func lockExclusively(_ path: String) throws(FileSystemError) -> (any FileHandle)? { try base.lockExclusively(path) }
    public func fileIdentity(_ path: String) throws(FileSystemError) -> FileIdentity { try base.fileIdentity(path) }
}

/// A real file handle whose writes and fdatasyncs ask ``FailingFileSystem`` first.
struct FailingFileHandle: FileHandle {
    let base: any FileHandle
    let fileSystem: FailingFileSystem

    var path: String { base.path }
    func write(_ bytes: [UInt8], at offset: Int64) throws(FileSystemError) {
        try fileSystem.mutating("pwrite", path)
        try fileSystem.check(.write, "pwrite", path)
        try base.write(bytes, at: offset)
    }
    func read(at offset: Int64, count: Int) throws(FileSystemError) -> [UInt8] { try base.read(at: offset, count: count) }
    func size() throws(FileSystemError) -> Int64 { try base.size() }
    func truncate(to size: Int64) throws(FileSystemError) {
        try fileSystem.mutating("ftruncate", path)
        try base.truncate(to: size)
    }
    func synchronizeData() throws(FileSystemError) {
        try fileSystem.mutating("fdatasync", path)
        try fileSystem.check(.synchronizeData, "fdatasync", path)
        try base.synchronizeData()
    }
    func close() { base.close() }
}

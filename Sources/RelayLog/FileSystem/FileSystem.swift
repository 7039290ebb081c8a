/// The file operations the log needs, so tests can substitute a file system that crashes, tears
/// writes, loses unsynced data and fails on demand.
///
/// Paths are plain strings. Every method reports failure with a ``FileSystemError``; none of them
/// retries. Implementations must be safe to call from several threads.
public protocol FileSystem: Sendable {
    /// Creates `path` and missing parents; succeeds when it already exists.
    func createDirectory(_ path: String) throws(FileSystemError)
    /// Names (not paths) of the entries of a directory, in no particular order.
    func listDirectory(_ path: String) throws(FileSystemError) -> [String]
    /// Whether anything exists at `path`.
    func exists(_ path: String) -> Bool
    /// Opens a file for reading and writing, creating it (empty) when `create` is true and it is missing.
    func open(_ path: String, create: Bool) throws(FileSystemError) -> any FileHandle
    /// Opens a file for appending, creating it with the permission bits `mode` (less the umask)
    /// when it is missing: every write goes to the end of the file, whatever offset it names
    /// (`O_APPEND`), so a caller writes at the file's ``FileHandle/size()``.
    func openForAppending(_ path: String, mode: UInt32) throws(FileSystemError) -> any FileHandle
    /// Renames `source` to `destination`, replacing it atomically.
    func rename(_ source: String, to destination: String) throws(FileSystemError)
    /// Removes a file.
    func remove(_ path: String) throws(FileSystemError)
    /// Makes the directory's entries (creates, renames, removals) durable.
    func synchronizeDirectory(_ path: String) throws(FileSystemError)
    /// Takes an exclusive advisory lock on `path` (created if missing) without waiting, and holds it
    /// until the returned handle is closed. Fails with `EWOULDBLOCK` when another holder has it;
    /// returns `nil` where locking does not apply (e.g. simulated file systems).
    func lockExclusively(_ path: String) throws(FileSystemError) -> (any FileHandle)?
    /// The device and inode of `path`: what tells a directory apart from a copy of it.
    func fileIdentity(_ path: String) throws(FileSystemError) -> FileIdentity
}

/// Where a file lives on its machine: a copy of it, even byte for byte, has another one.
public struct FileIdentity: Sendable, Hashable {
    /// The device (`st_dev`).
    public var device: UInt64
    /// The inode (`st_ino`).
    public var inode: UInt64

    /// An identity from its parts.
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// An open file. Reads and writes take explicit offsets, so one handle may serve several readers.
public protocol FileHandle: Sendable {
    /// The path the handle was opened with.
    var path: String { get }
    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: [UInt8], at offset: Int64) throws(FileSystemError)
    /// Reads up to `count` bytes at `offset` (fewer at the end of the file).
    func read(at offset: Int64, count: Int) throws(FileSystemError) -> [UInt8]
    /// The file's current size.
    func size() throws(FileSystemError) -> Int64
    /// Cuts (or extends with zeros) the file to `size` bytes.
    func truncate(to size: Int64) throws(FileSystemError)
    /// `fdatasync`: makes the written data durable. After it fails, the handle must not be trusted
    /// again (the kernel may have dropped the dirty pages): reopen and re-verify instead.
    func synchronizeData() throws(FileSystemError)
    /// Closes the handle.
    func close()
}

extension FileHandle {
    /// Writes zero bytes over `range`, a megabyte at a time (preallocation, and erasing a torn tail
    /// inside preallocated space).
    public func writeZeros(_ range: Range<Int64>) throws(FileSystemError) {
        var position = range.lowerBound
        while position < range.upperBound {
            let count = Int(min(Int64(zeroChunk.count), range.upperBound - position))
            try write(count == zeroChunk.count ? zeroChunk : Array(zeroChunk[0..<count]), at: position)
            position += Int64(count)
        }
    }
}

/// The megabyte of zeros ``FileHandle/writeZeros(_:)`` writes from.
private let zeroChunk = [UInt8](repeating: 0, count: 1 << 20)

extension FileSystem {
    /// Reads a whole file.
    public func readFile(_ path: String) throws(FileSystemError) -> [UInt8] {
        let handle = try open(path, create: false)
        defer { handle.close() }
        let size = try handle.size()
        return try handle.read(at: 0, count: Int(size))
    }

    /// Writes `bytes` to `path` so that afterwards the file holds either its old content or all of
    /// `bytes`, even across a crash: temporary file, fdatasync, rename, directory sync.
    public func writeAtomically(_ bytes: [UInt8], to path: String, directory: String) throws(FileSystemError) {
        let temporary = path + ".tmp"
        let handle = try open(temporary, create: true)
        do throws(FileSystemError) {
            try handle.truncate(to: 0)
            try handle.write(bytes, at: 0)
            try handle.synchronizeData()
            handle.close()
        } catch {
            handle.close()
            throw error
        }
        try rename(temporary, to: path)
        try synchronizeDirectory(directory)
    }
}

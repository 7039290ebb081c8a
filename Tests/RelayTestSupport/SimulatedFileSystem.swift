import NIOConcurrencyHelpers
public import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// An in-memory file system that models what a crash or power loss does to a real one.
///
/// Every file keeps its *durable* content (as of its last fdatasync) and the writes and truncations
/// made since. Every directory keeps its durable entries (as of its last directory sync) and the
/// creates, renames and removals made since. ``crashedCopy(using:)`` builds the file system a
/// machine would find after losing power:
/// - for each file, the durable content, then its unsynced writes and truncations in the order
///   they were made, each part on its own: every 512-byte sector a write covers is kept, dropped,
///   torn at any byte, or filled with garbage, and a truncation is kept or dropped. The page cache
///   writes back in any order, so a later sector can survive an earlier one that was lost, leaving
///   a hole of zeros or old bytes before it: SQLite's crash harness models a power loss the same
///   way. Garbage stays within the bytes the write covered: like SQLite's default "powersafe
///   overwrite", the model assumes a power loss does not damage bytes the write did not touch;
/// - for each directory, the durable entries plus a random prefix of its unsynced operations
///   (a journalling file system commits metadata in order).
///
/// Faults can also be injected: a crash after a number of operations (every call from then on
/// fails, like a dead process), or failures of chosen operations (EIO on fdatasync, ENOSPC on write).
public final class SimulatedFileSystem: FileSystem {
    /// A file-system call that can fail or count towards a crash.
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        case create, write, truncate, synchronizeData, rename, remove, synchronizeDirectory
    }

    enum FileChange: Sendable {
        case write(offset: Int, bytes: [UInt8])
        case truncate(size: Int)
    }

    enum DirectoryChange: Sendable {
        case link(name: String, inode: Int)
        case unlink(name: String)
        case rename(from: String, to: String, inode: Int)
    }

    struct Inode: Sendable {
        var current: [UInt8] = []
        var durable: [UInt8] = []
        var changes: [FileChange] = []
    }

    struct Directory: Sendable {
        var current: [String: Int] = [:]
        var durable: [String: Int] = [:]
        var changes: [DirectoryChange] = []
    }

    struct State: Sendable {
        var inodes: [Int: Inode] = [:]
        var directories: [String: Directory] = [:]
        var nextInode = 1
        var operations = 0
        var crashAfter: Int?
        var crashed = false
        var crashPoint: (operation: Operation, path: String)?
        var crashOn: (operation: Operation, occurrence: Int)?
        var operationCounts: [Operation: Int] = [:]
        var failures: [Operation: (errno: Int32, remaining: Int)] = [:]
    }

    let state: NIOLockedValueBox<State>
    private let syncGate = NIOLockedValueBox<(held: Bool, waiting: Int, pathsContaining: String?)>((false, 0, nil))

    /// An empty file system (the root directory exists).
    public init() {
        var initial = State()
        initial.directories["/"] = Directory()
        state = NIOLockedValueBox(initial)
    }

    init(state: State) {
        self.state = NIOLockedValueBox(state)
    }

    // MARK: Fault injection

    /// Makes the `count`-th mutating operation from now (and every call after it) fail as if the
    /// process had died there; the operation itself does not happen.
    public func crash(afterOperations count: Int) {
        state.withLockedValue {
            $0.crashAfter = $0.operations + count
        }
    }

    /// Crashes at the `occurrence`-th call of `operation` from now on (1 = the next one), to land
    /// a crash on a rare transition (a segment deletion) for certain.
    public func crash(onOperation operation: Operation, occurrence: Int) {
        state.withLockedValue { $0.crashOn = (operation, ($0.operationCounts[operation] ?? 0) + occurrence) }
    }

    /// Stops the "process" now: every later call fails.
    public func crashNow() {
        state.withLockedValue { $0.crashed = true }
    }

    /// Whether the simulated crash has happened.
    public var hasCrashed: Bool { state.withLockedValue { $0.crashed } }

    /// The call the crash interrupted (set by ``crash(afterOperations:)`` when it triggers).
    public var crashPoint: (operation: Operation, path: String)? { state.withLockedValue { $0.crashPoint } }

    /// Mutating operations performed so far.
    public var operationCount: Int { state.withLockedValue { $0.operations } }

    /// Makes the next `times` calls of `operation` fail with `errno` (e.g. `EIO`, `ENOSPC`).
    public func fail(_ operation: Operation, errno code: Int32, times: Int = 1) {
        state.withLockedValue { $0.failures[operation] = (code, times) }
    }

    /// Stops injecting failures.
    public func clearFailures() {
        state.withLockedValue { $0.failures = [:] }
    }

    /// What ``crashedCopy(using:)`` did to the sectors of the unsynced writes and to the truncations.
    public struct PowerLossReport: Sendable, Hashable {
        /// Sectors of unsynced writes kept whole.
        public var sectorsKept = 0
        /// Sectors lost.
        public var sectorsDropped = 0
        /// Sectors kept up to a random byte.
        public var sectorsTorn = 0
        /// Sectors filled with garbage.
        public var sectorsTrashed = 0
        /// Sectors kept (whole, torn or trashed) although an earlier sector of the same file was lost.
        public var sectorsKeptAfterALostOne = 0
        /// Truncations kept.
        public var truncationsKept = 0
        /// Truncations lost.
        public var truncationsDropped = 0

        /// No writes or truncations yet.
        public init() {}

        /// Adds another report's counts to this one.
        public mutating func add(_ other: PowerLossReport) {
            sectorsKept += other.sectorsKept
            sectorsDropped += other.sectorsDropped
            sectorsTorn += other.sectorsTorn
            sectorsTrashed += other.sectorsTrashed
            sectorsKeptAfterALostOne += other.sectorsKeptAfterALostOne
            truncationsKept += other.truncationsKept
            truncationsDropped += other.truncationsDropped
        }
    }

    /// The size of the sector that a torn write can fill with garbage.
    public static let sectorSize = 512

    /// The file system found after a power loss at this moment (see the type's description).
    public func crashedCopy(using generator: inout some RandomNumberGenerator) -> SimulatedFileSystem {
        crashedCopyWithReport(using: &generator).fileSystem
    }

    /// ``crashedCopy(using:)``, with what happened to the unsynced writes.
    public func crashedCopyWithReport(
        using generator: inout some RandomNumberGenerator
    ) -> (fileSystem: SimulatedFileSystem, report: PowerLossReport) {
        let snapshot = state.withLockedValue { $0 }
        var next = State()
        var report = PowerLossReport()
        next.nextInode = snapshot.nextInode
        // Inodes in a fixed order, so a seed gives the same power loss on every run.
        for id in snapshot.inodes.keys.sorted() {
            guard let inode = snapshot.inodes[id] else { continue }
            var content = inode.durable
            var lostOne = false
            for change in inode.changes {
                switch change {
                case .truncate:
                    if Bool.random(using: &generator) {
                        Self.apply(change, to: &content)
                        report.truncationsKept += 1
                    } else {
                        report.truncationsDropped += 1
                    }
                case .write(let offset, let bytes):
                    for piece in Self.sectorPieces(offset: offset, count: bytes.count) {
                        let part = Array(bytes[(piece.lowerBound - offset)..<(piece.upperBound - offset)])
                        // Kept half of the time; otherwise dropped, torn or trashed with equal odds.
                        switch Int.random(in: 0..<6, using: &generator) {
                        case 0, 1, 2:
                            Self.apply(.write(offset: piece.lowerBound, bytes: part), to: &content)
                            report.sectorsKept += 1
                        case 3:
                            report.sectorsDropped += 1
                            lostOne = true
                            continue
                        case 4:
                            let torn = Int.random(in: 0..<part.count, using: &generator)
                            Self.apply(.write(offset: piece.lowerBound, bytes: Array(part[0..<torn])), to: &content)
                            report.sectorsTorn += 1
                        default:
                            let garbage = (0..<part.count).map { _ in UInt8.random(in: 0...255, using: &generator) }
                            Self.apply(.write(offset: piece.lowerBound, bytes: garbage), to: &content)
                            report.sectorsTrashed += 1
                        }
                        if lostOne { report.sectorsKeptAfterALostOne += 1 }
                    }
                }
            }
            next.inodes[id] = Inode(current: content, durable: content, changes: [])
        }
        for path in snapshot.directories.keys.sorted() {
            guard let directory = snapshot.directories[path] else { continue }
            var entries = directory.durable
            let kept = Int.random(in: 0...directory.changes.count, using: &generator)
            for change in directory.changes.prefix(kept) {
                switch change {
                case .link(let name, let inode): entries[name] = inode
                case .unlink(let name): entries[name] = nil
                case .rename(let from, let to, let inode):
                    entries[from] = nil
                    entries[to] = inode
                }
            }
            next.directories[path] = Directory(current: entries, durable: entries, changes: [])
        }
        return (SimulatedFileSystem(state: next), report)
    }

    /// The parts of the file range `offset..<offset+count` that fall in one 512-byte sector each.
    static func sectorPieces(offset: Int, count: Int) -> [Range<Int>] {
        var pieces: [Range<Int>] = []
        var start = offset
        while start < offset + count {
            let end = min((start / sectorSize + 1) * sectorSize, offset + count)
            pieces.append(start..<end)
            start = end
        }
        return pieces
    }

    /// Flips one bit of a file, in both its durable and current content (media damage).
    public func flipBit(_ path: String, byte offset: Int, bit: Int) {
        state.withLockedValue { state in
            let (directory, name) = Self.split(path)
            guard let id = state.directories[directory]?.current[name], var inode = state.inodes[id] else { return }
            if offset < inode.current.count { inode.current[offset] ^= UInt8(1 << bit) }
            if offset < inode.durable.count { inode.durable[offset] ^= UInt8(1 << bit) }
            state.inodes[id] = inode
        }
    }

    /// The current content of a file, or `nil` when it does not exist.
    public func contents(_ path: String) -> [UInt8]? {
        state.withLockedValue { state in
            let (directory, name) = Self.split(path)
            guard let id = state.directories[directory]?.current[name] else { return nil }
            return state.inodes[id]?.current
        }
    }

    // MARK: FileSystem

    public func createDirectory(_ path: String) throws(FileSystemError) {
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) in
            try Self.checkAlive(&state, "mkdir", path)
            var prefix = ""
            for component in path.split(separator: "/") {
                prefix += "/" + component
                if state.directories[prefix] == nil { state.directories[prefix] = Directory() }
            }
        }
    }

    public func listDirectory(_ path: String) throws(FileSystemError) -> [String] {
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) in
            try Self.checkAlive(&state, "opendir", path)
            guard let directory = state.directories[Self.normalize(path)] else { throw Self.error("opendir", path, ENOENT) }
            return Array(directory.current.keys)
        }
    }

    public func exists(_ path: String) -> Bool {
        state.withLockedValue { state in
            let normalized = Self.normalize(path)
            if state.directories[normalized] != nil { return true }
            let (directory, name) = Self.split(normalized)
            return state.directories[directory]?.current[name] != nil
        }
    }

    public func open(_ path: String, create: Bool) throws(FileSystemError) -> any FileHandle {
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) -> any FileHandle in
            try Self.checkAlive(&state, "open", path)
            let (directoryPath, name) = Self.split(path)
            guard var directory = state.directories[directoryPath] else { throw Self.error("open", path, ENOENT) }
            if let id = directory.current[name] { return SimulatedFileHandle(fileSystem: self, inode: id, path: path) }
            guard create else { throw Self.error("open", path, ENOENT) }
            try Self.count(&state, .create, path)
            let id = state.nextInode
            state.nextInode += 1
            state.inodes[id] = Inode()
            directory.current[name] = id
            directory.changes.append(.link(name: name, inode: id))
            state.directories[directoryPath] = directory
            return SimulatedFileHandle(fileSystem: self, inode: id, path: path)
        }
    }

    /// ``open(_:create:)`` creating the file: the simulated disk has no permissions, and a caller
    /// appending writes at the file's size.
    public func openForAppending(_ path: String, mode: UInt32) throws(FileSystemError) -> any FileHandle {
        try open(path, create: true)
    }

    public func rename(_ source: String, to destination: String) throws(FileSystemError) {
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) in
            try Self.checkAlive(&state, "rename", source)
            let (sourceDirectory, sourceName) = Self.split(source)
            let (destinationDirectory, destinationName) = Self.split(destination)
            guard sourceDirectory == destinationDirectory else { throw Self.error("rename", source, EXDEV) }
            guard var directory = state.directories[sourceDirectory], let id = directory.current[sourceName] else {
                throw Self.error("rename", source, ENOENT)
            }
            try Self.count(&state, .rename, source)
            directory.current[sourceName] = nil
            directory.current[destinationName] = id
            // One journalled operation: both names change together or not at all.
            directory.changes.append(.rename(from: sourceName, to: destinationName, inode: id))
            state.directories[sourceDirectory] = directory
        }
    }

    public func remove(_ path: String) throws(FileSystemError) {
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) in
            try Self.checkAlive(&state, "unlink", path)
            let (directoryPath, name) = Self.split(path)
            guard var directory = state.directories[directoryPath], directory.current[name] != nil else { throw Self.error("unlink", path, ENOENT) }
            try Self.count(&state, .remove, path)
            directory.current[name] = nil
            directory.changes.append(.unlink(name: name))
            state.directories[directoryPath] = directory
        }
    }

    public func synchronizeDirectory(_ path: String) throws(FileSystemError) {
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) in
            try Self.checkAlive(&state, "fsync", path)
            let normalized = Self.normalize(path)
            guard var directory = state.directories[normalized] else { throw Self.error("fsync", path, ENOENT) }
            try Self.count(&state, .synchronizeDirectory, path)
            directory.durable = directory.current
            directory.changes = []
            state.directories[normalized] = directory
        }
    }

    /// One simulated disk: device 1, and an inode derived from the path (FNV-1a), the same after a
    /// crash, as a real directory's is after a reboot.
    public func fileIdentity(_ path: String) throws(FileSystemError) -> FileIdentity {
        guard exists(path) else { throw FileSystemError(operation: "stat", path: path, errno: ENOENT, reason: "No such file or directory") }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Self.normalize(path).utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return FileIdentity(device: 1, inode: hash)
    }

    public func lockExclusively(_ path: String) throws(FileSystemError) -> (any FileHandle)? {
        nil
    }

    // MARK: File operations (called by handles)

    func write(_ inode: Int, _ bytes: [UInt8], at offset: Int64, path: String) throws(FileSystemError) {
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) in
            try Self.checkAlive(&state, "pwrite", path)
            try Self.count(&state, .write, path)
            guard var file = state.inodes[inode] else { throw Self.error("pwrite", path, EBADF) }
            let change = FileChange.write(offset: Int(offset), bytes: bytes)
            Self.apply(change, to: &file.current)
            file.changes.append(change)
            state.inodes[inode] = file
        }
    }

    func truncate(_ inode: Int, to size: Int64, path: String) throws(FileSystemError) {
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) in
            try Self.checkAlive(&state, "ftruncate", path)
            try Self.count(&state, .truncate, path)
            guard var file = state.inodes[inode] else { throw Self.error("ftruncate", path, EBADF) }
            let change = FileChange.truncate(size: Int(size))
            Self.apply(change, to: &file.current)
            file.changes.append(change)
            state.inodes[inode] = file
        }
    }

    /// Makes every fdatasync (of a path containing `pathsContaining`, when given) wait until
    /// ``releaseSynchronize()``, as a slow disk would, so a test can pile appends up behind one
    /// sync, or hold one thread's syncs and not another's.
    public func holdSynchronize(pathsContaining: String? = nil) {
        syncGate.withLockedValue {
            $0.held = true
            $0.pathsContaining = pathsContaining
        }
    }

    /// Lets held and later fdatasyncs through.
    public func releaseSynchronize() { syncGate.withLockedValue { $0.held = false } }

    /// fdatasync calls waiting at the gate now.
    public var synchronizeCallsWaiting: Int { syncGate.withLockedValue { $0.waiting } }

    func synchronize(_ inode: Int, path: String) throws(FileSystemError) {
        // The caller is the log's own I/O thread: blocking it is what a slow disk does.
        if syncGate.withLockedValue({ gate in
            let holds = gate.held && gate.pathsContaining.map { path.contains($0) } != false
            if holds { gate.waiting += 1 }
            return holds
        }) {
            while syncGate.withLockedValue({ $0.held }) { usleep(100) }
            syncGate.withLockedValue { $0.waiting -= 1 }
        }
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) in
            try Self.checkAlive(&state, "fdatasync", path)
            try Self.count(&state, .synchronizeData, path)
            guard var file = state.inodes[inode] else { throw Self.error("fdatasync", path, EBADF) }
            file.durable = file.current
            file.changes = []
            state.inodes[inode] = file
        }
    }

    func read(_ inode: Int, at offset: Int64, count: Int, path: String) throws(FileSystemError) -> [UInt8] {
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) -> [UInt8] in
            try Self.checkAlive(&state, "pread", path)
            guard let file = state.inodes[inode] else { throw Self.error("pread", path, EBADF) }
            let start = min(Int(offset), file.current.count)
            let end = min(start + count, file.current.count)
            return Array(file.current[start..<end])
        }
    }

    func size(_ inode: Int, path: String) throws(FileSystemError) -> Int64 {
        try state.withLockedValueTyped { (state: inout State) throws(FileSystemError) -> Int64 in
            try Self.checkAlive(&state, "fstat", path)
            guard let file = state.inodes[inode] else { throw Self.error("fstat", path, EBADF) }
            return Int64(file.current.count)
        }
    }

    // MARK: Helpers

    static func apply(_ change: FileChange, to content: inout [UInt8]) {
        switch change {
        case .write(let offset, let bytes):
            if content.count < offset + bytes.count { content.append(contentsOf: repeatElement(0, count: offset + bytes.count - content.count)) }
            content.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
        case .truncate(let size):
            if content.count > size {
                content.removeSubrange(size...)
            } else {
                content.append(contentsOf: repeatElement(0, count: size - content.count))
            }
        }
    }

    static func checkAlive(_ state: inout State, _ operation: String, _ path: String) throws(FileSystemError) {
        if state.crashed { throw FileSystemError(operation: operation, path: path, errno: EIO, reason: "simulated crash") }
    }

    static func count(_ state: inout State, _ operation: Operation, _ path: String) throws(FileSystemError) {
        state.operations += 1
        state.operationCounts[operation, default: 0] += 1
        let targeted = state.crashOn.map { $0.operation == operation && state.operationCounts[operation] == $0.occurrence } ?? false
        if targeted || state.crashAfter.map({ state.operations >= $0 }) == true {
            if !state.crashed { state.crashPoint = (operation, path) }
            state.crashed = true
            throw FileSystemError(operation: operation.rawValue, path: path, errno: EIO, reason: "simulated crash")
        }
        if let failure = state.failures[operation], failure.remaining > 0 {
            state.failures[operation] = (failure.errno, failure.remaining - 1)
            throw FileSystemError(
                operation: operation.rawValue, path: path, errno: failure.errno, reason: "injected \(String(cString: strerror(failure.errno)))")
        }
    }

    static func error(_ operation: String, _ path: String, _ code: Int32) -> FileSystemError {
        FileSystemError(operation: operation, path: path, errno: code, reason: String(cString: strerror(code)))
    }

    static func normalize(_ path: String) -> String {
        "/" + path.split(separator: "/").joined(separator: "/")
    }

    static func split(_ path: String) -> (directory: String, name: String) {
        let parts = path.split(separator: "/")
        guard let last = parts.last else { return ("/", "") }
        return ("/" + parts.dropLast().joined(separator: "/"), String(last))
    }
}

/// A handle on a simulated file (an inode number), valid across renames like a real descriptor.
struct SimulatedFileHandle: FileHandle {
    let fileSystem: SimulatedFileSystem
    let inode: Int
    let path: String

    func write(_ bytes: [UInt8], at offset: Int64) throws(FileSystemError) { try fileSystem.write(inode, bytes, at: offset, path: path) }
    func read(at offset: Int64, count: Int) throws(FileSystemError) -> [UInt8] { try fileSystem.read(inode, at: offset, count: count, path: path) }
    func size() throws(FileSystemError) -> Int64 { try fileSystem.size(inode, path: path) }
    func truncate(to size: Int64) throws(FileSystemError) { try fileSystem.truncate(inode, to: size, path: path) }
    func synchronizeData() throws(FileSystemError) { try fileSystem.synchronize(inode, path: path) }
    func close() {}
}

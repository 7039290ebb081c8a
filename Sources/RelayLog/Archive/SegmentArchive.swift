/// A directory of sealed segment files copied out of the log (`--archive-dir`, `wal archive`):
/// the same files, under the same names, so `wal verify`, `replay --from-archive` and
/// `stats --rebuild --from-archive` read it as they read a log.
///
/// A copy is crash-safe: the bytes go to `NAME.<random>.tmp`, are fdatasync'ed, renamed to
/// `NAME`, and the directory is synced; only then may the log delete its segment. A crash at any
/// point leaves the segment in the log and at most a `.tmp` file (never read; safe to delete) or
/// a complete copy in the archive, and the next copy finds the complete one and leaves it as it
/// is (the same bytes), so nothing is lost and nothing is archived twice.
public struct SegmentArchive: Sendable {
    /// The archive directory.
    public let directory: String
    let fileSystem: any FileSystem

    /// What storing a segment did.
    public enum Outcome: String, Sendable, Hashable {
        /// The segment was copied in (replacing, when the archive held the same segment sealed
        /// with another salt or key, that older copy).
        case copied
        /// The archive already held the same bytes under that name (an earlier copy, perhaps
        /// interrupted before the log deleted its segment).
        case alreadyArchived
    }

    /// The bytes copied (and compared) per read and write.
    let chunkBytes: Int

    /// An archive in `directory` (created on first use).
    public init(directory: String, fileSystem: any FileSystem = PosixFileSystem()) {
        self.init(directory: directory, fileSystem: fileSystem, chunkBytes: 1 << 20)
    }

    /// An archive copying `chunkBytes` at a time (tests make copies interleave with small ones).
    init(directory: String, fileSystem: any FileSystem, chunkBytes: Int) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.chunkBytes = max(1, chunkBytes)
    }

    /// Copies the segment file at `source` into the archive under `name`.
    ///
    /// - Throws: ``LogError/archiveConflict(segment:archiveDirectory:)`` when the archive holds
    ///   other bytes under that name, ``LogError/fileSystem(_:context:)`` when reading, writing
    ///   or syncing fails. The log's segment is untouched either way.
    @discardableResult
    public func store(segmentAt source: String, name: String) throws(LogError) -> Outcome {
        let destination = "\(directory)/\(name)"
        // A name of its own per copy: two copies of one segment at once (a server's retention
        // and `wal archive` into the same directory) must never write into each other's file,
        // or one could rename the other's half-written bytes into place.
        let temporary = "\(destination).\(UInt64.random(in: 0...UInt64.max)).tmp"
        let context = "archiving \(name) into \(directory)"
        do {
            try fileSystem.createDirectory(directory)
            let input = try fileSystem.open(source, create: false)
            defer { input.close() }
            let size = try input.size()
            if fileSystem.exists(destination) {
                if try sameBytes(input, size: size, as: destination) { return .alreadyArchived }
                // The same segment sealed anew (`wal rekey` draws a salt per rewrite): the log's copy
                // replaces the archive's. Anything else is another relay's, or damaged: refused.
                guard try sameSegmentResealed(input, as: destination) else {
                    throw LogError.archiveConflict(segment: name, archiveDirectory: directory)
                }
            }
            let output = try fileSystem.open(temporary, create: true)
            do throws(FileSystemError) {
                try output.truncate(to: 0)
                var offset: Int64 = 0
                while offset < size {
                    let bytes = try input.read(at: offset, count: Int(min(Int64(chunkBytes), size - offset)))
                    guard !bytes.isEmpty else { break }
                    try output.write(bytes, at: offset)
                    offset += Int64(bytes.count)
                }
                try output.synchronizeData()
                output.close()
            } catch {
                output.close()
                try? fileSystem.remove(temporary)
                throw error
            }
            try fileSystem.rename(temporary, to: destination)
            try fileSystem.synchronizeDirectory(directory)
            return .copied
        } catch let error as LogError {
            throw error
        } catch let error as FileSystemError {
            throw .fileSystem(error, context: context)
        } catch {
            throw .fileSystem(FileSystemError(operation: "copy", path: source, errno: 0, reason: "\(error)"), context: context)
        }
    }

    /// Whether the file at `path` is `input`'s segment with its frames sealed again: the same
    /// 32-byte segment header (its first sequence and creation time to the nanosecond) and the
    /// same frames (first sequence, event count, uncompressed length, codec), whatever their
    /// payloads. Two relays' segments of one name differ in their creation time.
    private func sameSegmentResealed(_ input: any FileHandle, as path: String) throws(FileSystemError) -> Bool {
        let other = try fileSystem.open(path, create: false)
        defer { other.close() }
        guard try input.read(at: 0, count: SegmentHeader.size) == other.read(at: 0, count: SegmentHeader.size) else { return false }
        return try Self.frameShapes(input) == Self.frameShapes(other)
    }

    /// What each valid frame of a segment holds, payloads aside.
    private static func frameShapes(_ handle: any FileHandle) throws(FileSystemError) -> [[UInt64]] {
        var walker = try FrameWalker(handle: handle)
        var shapes: [[UInt64]] = []
        while true {
            switch try walker.next() {
            case .frame(let header, _, _):
                shapes.append([header.firstSequence, UInt64(header.eventCount), UInt64(header.uncompressedLength), UInt64(header.codec.rawValue)])
            case .damaged: continue
            case .damagedTail, .end: return shapes
            }
        }
    }

    /// Whether the file at `path` holds exactly the `size` bytes of `input`.
    private func sameBytes(_ input: any FileHandle, size: Int64, as path: String) throws(FileSystemError) -> Bool {
        let other = try fileSystem.open(path, create: false)
        defer { other.close() }
        guard try other.size() == size else { return false }
        var offset: Int64 = 0
        while offset < size {
            let count = Int(min(Int64(chunkBytes), size - offset))
            let mine = try input.read(at: offset, count: count)
            guard !mine.isEmpty, try other.read(at: offset, count: count) == mine else { return false }
            offset += Int64(mine.count)
        }
        return true
    }
}

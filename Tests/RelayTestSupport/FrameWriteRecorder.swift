public import RelayLog
public import Synchronization

// Frames as the bytes written to segment files show them, for checks that need what a write
// carried (nonces, keys) rather than what a reader decodes.

/// One frame as found in bytes, its envelope split when it is encrypted.
public struct RawFrame: Sendable, Hashable {
    /// Where the frame starts in the bytes parsed.
    public var offset: Int
    public var header: FrameHeader
    /// The header's 28 authenticated bytes (magic to stored length).
    public var authenticated: [UInt8]
    /// The stored payload (for an encrypted frame: the whole envelope).
    public var stored: [UInt8]
    /// For an encrypted frame: its key id, salt, ciphertext and tag.
    public var keyID: String?
    public var salt: [UInt8]?
    public var ciphertext: [UInt8]?
    public var tag: [UInt8]?
}

/// The frames of `bytes` from `start`, up to the first bytes that are not a valid frame header
/// followed by its whole payload (a segment's zero tail, the end of a write).
public func parseFrames(_ bytes: [UInt8], from start: Int) -> [RawFrame] {
    var frames: [RawFrame] = []
    var offset = start
    while offset + FrameHeader.size <= bytes.count {
        guard case .success(let header) = bytes[offset..<(offset + FrameHeader.size)].withUnsafeBufferPointer({ FrameHeader.decode($0) }),
            offset + header.frameSize <= bytes.count
        else { break }
        let stored = Array(bytes[(offset + FrameHeader.size)..<(offset + header.frameSize)])
        var frame = RawFrame(
            offset: offset, header: header, authenticated: Array(bytes[offset..<(offset + 24)]), stored: stored)
        if header.isEncrypted, let length = stored.first.map(Int.init), stored.count >= 1 + length + FrameEnvelope.saltSize + FrameEnvelope.tagSize {
            let saltStart = 1 + length
            let cipherStart = saltStart + FrameEnvelope.saltSize
            let tagStart = stored.count - FrameEnvelope.tagSize
            frame.keyID = String(decoding: stored[1..<saltStart], as: UTF8.self)
            frame.salt = Array(stored[saltStart..<cipherStart])
            frame.ciphertext = Array(stored[cipherStart..<tagStart])
            frame.tag = Array(stored[tagStart...])
        }
        frames.append(frame)
        offset += header.frameSize
    }
    return frames
}

// MARK: Recording the frames written

/// A frame seen in a write to a segment file (`.wal` or `.wal.tmp`), with the writer session it
/// belongs to.
public struct WrittenFrame: Sendable {
    public var path: String
    public var session: Int
    public var header: FrameHeader
    public var authenticated: [UInt8]
    public var keyID: String?
    public var salt: [UInt8]?
    public var ciphertext: [UInt8]?
    public var tag: [UInt8]?
}

/// Collects every frame written through a ``RecordingFileSystem``, whether or not the write then
/// succeeded (a write that fails may still have reached the disk in part).
public final class FrameWriteRecorder: Sendable {
    private let recorded = Mutex<[WrittenFrame]>([])
    /// Which writer session writes now (the test moves it on at each reopen).
    public let session = Atomic<Int>(0)

    /// A recorder that has seen nothing yet.
    public init() {}

    public var frames: [WrittenFrame] { recorded.withLock { $0 } }

    public func record(_ bytes: [UInt8], path: String) {
        // Buffers of frames, or whole segments (a rewrite: `wal rekey`, an erasure) whose frames
        // follow the segment header; preallocation is zeros.
        let start = bytes.count >= SegmentHeader.size && Array(bytes[0..<4]) == SegmentHeader.magic ? SegmentHeader.size : 0
        guard bytes.count >= start + FrameHeader.size, Array(bytes[start..<(start + 4)]) == FrameHeader.magic else { return }
        let session = session.load(ordering: .relaxed)
        let frames = parseFrames(bytes, from: start).map { frame in
            WrittenFrame(
                path: path, session: session, header: frame.header, authenticated: frame.authenticated, keyID: frame.keyID, salt: frame.salt,
                ciphertext: frame.ciphertext, tag: frame.tag)
        }
        recorded.withLock { $0 += frames }
    }
}

/// A file system that hands everything to `base`, and shows every write to a segment file to a
/// ``FrameWriteRecorder`` first.
public final class RecordingFileSystem: FileSystem {
    public let base: any FileSystem
    public let recorder: FrameWriteRecorder

    /// `base`, its segment writes shown to `recorder`.
    public init(base: any FileSystem, recorder: FrameWriteRecorder) {
        self.base = base
        self.recorder = recorder
    }

    public func createDirectory(_ path: String) throws(FileSystemError) { try base.createDirectory(path) }
    public func listDirectory(_ path: String) throws(FileSystemError) -> [String] { try base.listDirectory(path) }
    public func exists(_ path: String) -> Bool { base.exists(path) }
    public func open(_ path: String, create: Bool) throws(FileSystemError) -> any RelayLog.FileHandle {
        RecordingFileHandle(base: try base.open(path, create: create), recorder: recorder)
    }
    public func openForAppending(_ path: String, mode: UInt32) throws(FileSystemError) -> any RelayLog.FileHandle {
        RecordingFileHandle(base: try base.openForAppending(path, mode: mode), recorder: recorder)
    }
    public func rename(_ source: String, to destination: String) throws(FileSystemError) { try base.rename(source, to: destination) }
    public func remove(_ path: String) throws(FileSystemError) { try base.remove(path) }
    public func synchronizeDirectory(_ path: String) throws(FileSystemError) { try base.synchronizeDirectory(path) }
    public func lockExclusively(_ path: String) throws(FileSystemError) -> (any RelayLog.FileHandle)? { try base.lockExclusively(path) }
    public func fileIdentity(_ path: String) throws(FileSystemError) -> FileIdentity { try base.fileIdentity(path) }
}

/// A handle of ``RecordingFileSystem``.
public struct RecordingFileHandle: RelayLog.FileHandle {
    public let base: any RelayLog.FileHandle
    public let recorder: FrameWriteRecorder

    public var path: String { base.path }
    public func write(_ bytes: [UInt8], at offset: Int64) throws(FileSystemError) {
        // Segments are written as NAME.wal.tmp (the roll keeps that descriptor) or NAME.wal.
        if path.hasSuffix(".wal") || path.hasSuffix(".wal.tmp") { recorder.record(bytes, path: path) }
        try base.write(bytes, at: offset)
    }
    public func read(at offset: Int64, count: Int) throws(FileSystemError) -> [UInt8] { try base.read(at: offset, count: count) }
    public func size() throws(FileSystemError) -> Int64 { try base.size() }
    public func truncate(to size: Int64) throws(FileSystemError) { try base.truncate(to: size) }
    public func synchronizeData() throws(FileSystemError) { try base.synchronizeData() }
    public func close() { base.close() }
}

/// Walks the frames of one segment file, in order, resynchronising after damage.
///
/// Each step yields a valid frame (header CRC and payload CRC both match), a damaged range
/// followed by a valid frame further on, a damaged tail (no valid frame follows: a torn write or
/// garbage at the end), or the end of the file. Nothing is written; the caller decides what to do
/// with damage.
struct FrameWalker: Sendable {
    /// One step of the walk.
    enum Step {
        /// A valid frame at `offset`; `stored` is its payload as stored.
        case frame(FrameHeader, offset: Int64, stored: [UInt8])
        /// Bytes `range` hold no valid frame, and a valid frame starts at `range.upperBound`.
        case damaged(Range<Int64>, reason: String)
        /// Bytes `range` up to the end of the file hold no valid frame.
        case damagedTail(Range<Int64>, reason: String)
        /// The walk reached the end of the file exactly at a frame boundary.
        case end
    }

    let handle: any FileHandle
    /// Where the next frame starts.
    private(set) var offset: Int64
    private var fileSize: Int64
    private var buffer: [UInt8] = []
    private var bufferOffset: Int64 = 0
    private static let readSize = 1 << 20

    init(handle: any FileHandle, offset: Int64 = Int64(SegmentHeader.size)) throws(FileSystemError) {
        self.handle = handle
        self.offset = offset
        self.fileSize = try handle.size()
    }

    /// Re-reads the file size (for a segment that is still being appended to).
    mutating func refreshSize() throws(FileSystemError) {
        fileSize = try handle.size()
        // Bytes past the durable end may have been rewritten since they were buffered.
        buffer = []
    }

    /// Whether the file (as last measured) has bytes past the walk's position.
    var hasMoreBytes: Bool { offset < fileSize }

    /// Moves the walk to `newOffset` (a frame boundary found earlier).
    mutating func seek(to newOffset: Int64) {
        offset = newOffset
    }

    mutating func next() throws(FileSystemError) -> Step {
        guard offset < fileSize else { return .end }
        switch try frame(at: offset) {
        case .success(let (header, stored)):
            let start = offset
            offset += Int64(header.frameSize)
            return .frame(header, offset: start, stored: stored)
        case .failure(let reason):
            let start = offset
            if let resume = try findValidFrame(after: start) {
                offset = resume
                return .damaged(start..<resume, reason: reason.reason)
            }
            offset = fileSize
            return .damagedTail(start..<fileSize, reason: reason.reason)
        }
    }

    private enum Check: Error { case invalid(String) }

    /// The frame at `position` when it is whole and both CRCs match, else why not.
    private mutating func frame(at position: Int64) throws(FileSystemError) -> Result<(FrameHeader, [UInt8]), Failure> {
        guard fileSize - position >= Int64(FrameHeader.size) else {
            return .failure(Failure("incomplete frame header (\(fileSize - position) bytes before the end of the file)"))
        }
        let headerBytes = try bytes(at: position, count: FrameHeader.size)
        let decoded = headerBytes.withUnsafeBufferPointer { FrameHeader.decode($0) }
        let header: FrameHeader
        switch decoded {
        case .success(let value): header = value
        case .failure(let problem): return .failure(Failure(problem.description))
        }
        let payloadStart = position + Int64(FrameHeader.size)
        guard fileSize - payloadStart >= Int64(header.storedLength) else {
            return .failure(Failure("frame of \(header.frameSize) bytes runs past the end of the file (incomplete write)"))
        }
        let stored = try bytes(at: payloadStart, count: Int(header.storedLength))
        guard Zlib.crc32(stored) == header.payloadCRC else { return .failure(Failure("payload CRC mismatch")) }
        return .success((header, stored))
    }

    struct Failure: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The offset of the next valid frame after `start`, scanning for the magic.
    private mutating func findValidFrame(after start: Int64) throws(FileSystemError) -> Int64? {
        var position = start + 1
        let magic = FrameHeader.magic
        while position + Int64(FrameHeader.size) <= fileSize {
            let window = try bytes(at: position, count: Int(min(Int64(Self.readSize), fileSize - position)))
            var found: Int64?
            window.withUnsafeBufferPointer { buffer in
                var index = 0
                while index + 4 <= buffer.count {
                    if buffer[index] == magic[0], buffer[index + 1] == magic[1], buffer[index + 2] == magic[2], buffer[index + 3] == magic[3] {
                        found = position + Int64(index)
                        return
                    }
                    index += 1
                }
            }
            guard let candidate = found else {
                position += Int64(max(1, window.count - 3))
                continue
            }
            if case .success = try frame(at: candidate) { return candidate }
            position = candidate + 1
        }
        return nil
    }

    /// `count` bytes at `position`, served from a read-ahead buffer.
    private mutating func bytes(at position: Int64, count: Int) throws(FileSystemError) -> [UInt8] {
        let bufferEnd = bufferOffset + Int64(buffer.count)
        if position >= bufferOffset, position + Int64(count) <= bufferEnd {
            let start = Int(position - bufferOffset)
            return Array(buffer[start..<(start + count)])
        }
        if count >= Self.readSize {
            return try handle.read(at: position, count: count)
        }
        buffer = try handle.read(at: position, count: Self.readSize)
        bufferOffset = position
        let available = min(count, buffer.count)
        return Array(buffer[0..<available])
    }
}

/// Walks the frames of one segment file, in order, resynchronising after damage.
///
/// Each step yields a valid frame (header CRC and payload CRC both match), a damaged range
/// followed by a valid frame further on, a damaged tail (no valid frame follows: a torn write or
/// garbage at the end), or the end of the data. Nothing is written; the caller decides what to do
/// with damage.
///
/// Segments are preallocated with zero bytes, so the data of a segment ends either at the end of
/// the file or where only zero bytes remain up to it (the unused part of the preallocation). A
/// frame boundary followed by nothing but zeros is therefore a clean end, not damage; zeros
/// followed by anything else are damage like any other bytes that are not a valid frame.
struct FrameWalker: Sendable {
    /// One step of the walk.
    enum Step {
        /// A valid frame at `offset`; `stored` is its payload as stored.
        case frame(FrameHeader, offset: Int64, stored: [UInt8])
        /// Bytes `range` hold no valid frame, and a valid frame starts at `range.upperBound`.
        case damaged(Range<Int64>, reason: String)
        /// Bytes `range` hold no valid frame, and nothing but zero bytes follows it up to the end
        /// of the file (the range ends at its last non-zero byte).
        case damagedTail(Range<Int64>, reason: String)
        /// The walk reached the end of the data at a frame boundary: the end of the file, or a
        /// preallocated tail of zero bytes. The position stays at the boundary, where the next
        /// frame will be written.
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

    /// Where the data ends when the last step was ``Step/end`` at a zero tail: the file's bytes
    /// from there on were all zero when read.
    private var zeroTailStart: Int64?

    /// Whether the file (as last measured) may hold a frame past the walk's position: it has bytes
    /// there that were not read as a zero tail.
    var hasMoreBytes: Bool { offset < fileSize && zeroTailStart != offset }

    /// Moves the walk to `newOffset` (a frame boundary found earlier).
    mutating func seek(to newOffset: Int64) {
        offset = newOffset
    }

    mutating func next() throws(FileSystemError) -> Step {
        zeroTailStart = nil
        guard offset < fileSize else { return .end }
        var attempt = try frame(at: offset)
        if case .failure = attempt, !buffer.isEmpty {
            // The read-ahead may hold zeros of preallocated space where frames were written since.
            buffer = []
            attempt = try frame(at: offset)
        }
        if case .failure = attempt {
            // The writer extends the active segment's preallocation as frames reach its end: a
            // frame that crosses the size measured earlier is whole, not torn. Measure again.
            let size = try handle.size()
            if size > fileSize {
                fileSize = size
                buffer = []
                attempt = try frame(at: offset)
            }
        }
        switch attempt {
        case .success(let (header, stored)):
            let start = offset
            offset += Int64(header.frameSize)
            return .frame(header, offset: start, stored: stored)
        case .failure(let reason):
            let start = offset
            guard let firstData = try firstNonZeroByte(in: start..<fileSize) else {
                // Unused preallocated space; frames written later land here, so nothing read-ahead is kept.
                zeroTailStart = start
                buffer = []
                return .end
            }
            if let resume = try findValidFrame(after: max(start, firstData - 1)) {
                offset = resume
                return .damaged(start..<resume, reason: reason.reason)
            }
            let dataEnd = try lastNonZeroByte(in: firstData..<fileSize).map { $0 + 1 } ?? fileSize
            offset = fileSize
            return .damagedTail(start..<dataEnd, reason: reason.reason)
        }
    }

    /// The offset of the first byte in `range` that is not zero, reading the file directly.
    private func firstNonZeroByte(in range: Range<Int64>) throws(FileSystemError) -> Int64? {
        var position = range.lowerBound
        while position < range.upperBound {
            let chunk = try handle.read(at: position, count: Int(min(Int64(Self.readSize), range.upperBound - position)))
            if chunk.isEmpty { return nil }
            if let index = Self.firstNonZeroIndex(chunk) { return position + Int64(index) }
            position += Int64(chunk.count)
        }
        return nil
    }

    /// The offset of the last byte in `range` that is not zero, reading backwards from its end.
    private func lastNonZeroByte(in range: Range<Int64>) throws(FileSystemError) -> Int64? {
        var end = range.upperBound
        while end > range.lowerBound {
            let start = max(range.lowerBound, end - Int64(Self.readSize))
            let chunk = try handle.read(at: start, count: Int(end - start))
            if let index = chunk.lastIndex(where: { $0 != 0 }) { return start + Int64(index) }
            end = start
        }
        return nil
    }

    /// The index of the first non-zero byte, comparing eight bytes at a time (a preallocated
    /// segment has up to its whole size of zeros to check on open).
    static func firstNonZeroIndex(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBytes { raw -> Int? in
            let words = raw.count / 8
            var index = 0
            while index < words {
                if raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self) != 0 { break }
                index += 1
            }
            var byte = index * 8
            while byte < raw.count {
                if raw[byte] != 0 { return byte }
                byte += 1
            }
            return nil
        }
    }

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

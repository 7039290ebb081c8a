import RelayCore
import RelayEventJSON
import RelayIO

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a file or standard input in large chunks that end at a line boundary, on a thread of its
/// own (reads block; they never run on the cooperative pool).
actor ChunkedInput: BlockingActor {
    /// A run of whole lines and the number of its first line.
    struct Chunk: Sendable {
        var bytes: [UInt8]
        var firstLine: Int
        var lineCount: Int
    }

    /// Why the input could not be read.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The thread every read runs on.
    nonisolated let executor: BlockingExecutor
    private let descriptor: Int32
    private let name: String
    private var carry: [UInt8] = []
    private var nextLine = 1
    private var finished = false
    private let chunkBytes: Int
    /// Pipes and terminals deliver lines as a producer writes them: commit what has arrived rather
    /// than wait for a full chunk.
    private let isStream: Bool
    /// Bytes read so far.
    private(set) var bytesRead: Int64 = 0
    /// The input's size when it is a regular file (for progress), else `nil`.
    nonisolated let totalBytes: Int64?

    private init(executor: BlockingExecutor, descriptor: Int32, name: String, totalBytes: Int64?, chunkBytes: Int) {
        self.executor = executor
        self.descriptor = descriptor
        self.name = name
        self.totalBytes = totalBytes
        self.isStream = totalBytes == nil
        self.chunkBytes = chunkBytes
    }

    /// Opens `path`, or standard input for `-`.
    static func open(path: String, chunkBytes: Int = 4 << 20) async throws(Failure) -> ChunkedInput {
        let executor = BlockingExecutor(name: "ingest-read")
        if path == "-" {
            return ChunkedInput(executor: executor, descriptor: 0, name: "standard input", totalBytes: nil, chunkBytes: chunkBytes)
        }
        let (descriptor, totalBytes) = try await executor.run { () throws(Failure) -> (Int32, Int64?) in
            let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
            var info = stat()
            let size = fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int64(info.st_size) : nil
            return (descriptor, size)
        }
        return ChunkedInput(executor: executor, descriptor: descriptor, name: path, totalBytes: totalBytes, chunkBytes: chunkBytes)
    }

    /// The next chunk, or `nil` at the end of the input.
    ///
    /// A chunk always ends at a line boundary (or at the end of the input), however long a line
    /// is: a line longer than the batch is read to its end. Past ``EventLines/maximumLineBytes``
    /// only a prefix of it is kept, enough for it to be refused as too long, so memory stays bounded.
    func next() throws(Failure) -> Chunk? {
        while true {
            if finished {
                guard !carry.isEmpty else { return nil }
                let rest = carry
                carry = []
                return chunk(rest)
            }
            var buffer = try readMore(after: carry)
            carry = []
            if finished { return buffer.isEmpty ? nil : chunk(buffer) }
            if let lastNewline = buffer.lastIndex(of: 0x0A) {
                carry = Array(buffer[(lastNewline + 1)...])
                buffer.removeSubrange((lastNewline + 1)...)
                return chunk(buffer)
            }
            let keep = EventLines.maximumLineBytes + 1
            if buffer.count > keep { buffer.removeSubrange(keep...) }
            carry = buffer
        }
    }

    private func chunk(_ bytes: [UInt8]) -> Chunk {
        let lines = Self.countNewlines(bytes) + (bytes.last == 0x0A ? 0 : 1)
        let chunk = Chunk(bytes: bytes, firstLine: nextLine, lineCount: lines)
        nextLine += lines
        return chunk
    }

    /// `previous` followed by up to `chunkBytes` more bytes of input (less for a stream that
    /// delivered a newline, or at the end of the input, which sets `finished`).
    private func readMore(after previous: [UInt8]) throws(Failure) -> [UInt8] {
        var readError: Int32 = 0
        var reachedEnd = false
        let descriptor = descriptor
        let isStream = isStream
        let buffer = [UInt8](unsafeUninitializedCapacity: previous.count + chunkBytes) { storage, initialized in
            guard let base = storage.baseAddress else { return }
            previous.withUnsafeBufferPointer { old in
                if let source = old.baseAddress { base.update(from: source, count: old.count) }
            }
            var filled = previous.count
            while filled < storage.count {
                let count = read(descriptor, base + filled, storage.count - filled)
                if count < 0 {
                    if errno == EINTR { continue }
                    readError = errno
                    break
                }
                if count == 0 {
                    reachedEnd = true
                    break
                }
                filled += count
                if isStream, memchr(base + filled - count, 0x0A, count) != nil { break }
            }
            initialized = filled
        }
        if readError != 0 { throw Failure(description: "cannot read \(name): \(String(cString: strerror(readError)))") }
        bytesRead += Int64(buffer.count - previous.count)
        finished = reachedEnd
        return buffer
    }

    private static func countNewlines(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBufferPointer { (buffer: UnsafeBufferPointer<UInt8>) -> Int in
            guard let base = buffer.baseAddress else { return 0 }
            var offset = 0
            var count = 0
            while offset < buffer.count {
                guard let found = memchr(base + offset, 0x0A, buffer.count - offset) else { break }
                offset = UnsafeRawPointer(found) - UnsafeRawPointer(base) + 1
                count += 1
            }
            return count
        }
    }

    /// Closes the input (not standard input), once no read is under way.
    nonisolated func close() {
        if descriptor != 0 { Glibc.close(descriptor) }
    }
}

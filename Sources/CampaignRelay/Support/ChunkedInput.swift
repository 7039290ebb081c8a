#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file or standard input in large chunks that end at a line boundary.
struct ChunkedInput {
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
    let totalBytes: Int64?

    /// Opens `path`, or standard input for `-`.
    init(path: String, chunkBytes: Int = 4 << 20) throws {
        self.chunkBytes = chunkBytes
        if path == "-" {
            descriptor = 0
            name = "standard input"
            totalBytes = nil
            isStream = true
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            name = path
            guard descriptor >= 0 else { throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
            var info = stat()
            totalBytes = fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int64(info.st_size) : nil
            isStream = totalBytes == nil
        }
    }

    /// The next chunk, or `nil` at the end of the input.
    mutating func next() throws -> Chunk? {
        guard !finished else { return nil }
        let previous = carry
        carry = []
        var readError: Int32 = 0
        var reachedEnd = false
        var buffer = [UInt8](unsafeUninitializedCapacity: previous.count + chunkBytes) { storage, initialized in
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
        if !finished, let lastNewline = buffer.lastIndex(of: 0x0A) {
            carry = Array(buffer[(lastNewline + 1)...])
            buffer.removeSubrange((lastNewline + 1)...)
        }
        if buffer.isEmpty { return finished ? nil : try next() }
        let lines = Self.countNewlines(buffer) + (buffer.last == 0x0A ? 0 : 1)
        let chunk = Chunk(bytes: buffer, firstLine: nextLine, lineCount: lines)
        nextLine += lines
        return chunk
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

    /// Closes the input (not standard input).
    func close() {
        if descriptor != 0 { Glibc.close(descriptor) }
    }
}

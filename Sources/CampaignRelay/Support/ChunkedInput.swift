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
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            name = path
            guard descriptor >= 0 else { throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
            var info = stat()
            totalBytes = fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int64(info.st_size) : nil
        }
    }

    /// The next chunk, or `nil` at the end of the input.
    mutating func next() throws -> Chunk? {
        guard !finished else { return nil }
        var buffer = carry
        carry = []
        let start = buffer.count
        buffer.reserveCapacity(start + chunkBytes)
        buffer.append(contentsOf: repeatElement(0, count: chunkBytes))
        var filled = start
        while filled < buffer.count {
            let count = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return read(descriptor, base + filled, raw.count - filled)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "cannot read \(name): \(String(cString: strerror(errno)))")
            }
            if count == 0 {
                finished = true
                break
            }
            filled += count
            bytesRead += Int64(count)
        }
        buffer.removeSubrange(filled...)
        if !finished, let lastNewline = buffer.lastIndex(of: 0x0A) {
            carry = Array(buffer[(lastNewline + 1)...])
            buffer.removeSubrange((lastNewline + 1)...)
        }
        if buffer.isEmpty { return finished ? nil : try next() }
        let lines = buffer.reduce(into: 0) { count, byte in if byte == 0x0A { count += 1 } } + (buffer.last == 0x0A ? 0 : 1)
        let chunk = Chunk(bytes: buffer, firstLine: nextLine, lineCount: lines)
        nextLine += lines
        return chunk
    }

    /// Closes the input (not standard input).
    func close() {
        if descriptor != 0 { Glibc.close(descriptor) }
    }
}

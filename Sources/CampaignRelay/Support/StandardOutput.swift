#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Buffered writes to standard output and standard error (`print` flushes far too often for dumps
/// of millions of lines).
struct StandardOutput {
    private var buffer: [UInt8] = []
    private let descriptor: Int32

    static func output() -> StandardOutput { StandardOutput(descriptor: 1) }
    static func error() -> StandardOutput { StandardOutput(descriptor: 2) }

    private init(descriptor: Int32) {
        self.descriptor = descriptor
        buffer.reserveCapacity(1 << 16)
    }

    /// Whether the stream is a terminal (progress displays only draw on one).
    var isTerminal: Bool { isatty(descriptor) == 1 }

    mutating func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    mutating func line(_ text: String) {
        write(text)
        write("\n")
    }

    mutating func flush() {
        var written = 0
        while written < buffer.count {
            let result = buffer.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.write(descriptor, base + written, raw.count - written)
            }
            if result < 0, errno == EINTR { continue }
            guard result > 0 else { break }
            written += result
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

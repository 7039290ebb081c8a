public import RelayCore

/// Decoding many events from newline-delimited JSON (JSONL / NDJSON) text.
public enum EventLines {
    /// The longest line accepted, in bytes.
    public static let maximumLineBytes = 1 << 20

    /// A line that was refused: its 1-based number and why.
    public struct Rejection: Sendable, Hashable, CustomStringConvertible {
        /// 1-based line number in the whole input.
        public var line: Int
        /// Why it was refused.
        public var error: EventInputError

        /// Creates a rejection.
        public init(line: Int, error: EventInputError) {
            self.line = line
            self.error = error
        }

        public var description: String { "line \(line): \(error.message)" }
    }

    /// The events and rejections of a run of lines.
    public struct Decoded: Sendable {
        /// Valid events, in line order.
        public var events: [Event] = []
        /// The line number of each of ``events``.
        public var eventLines: [Int] = []
        /// Refused lines, in line order.
        public var rejections: [Rejection] = []
        /// Lines seen (blank ones included).
        public var lines = 0
    }

    /// Decodes every non-blank line of `bytes`; the first line is numbered `firstLine`. A line
    /// whose event `admission` does not take is refused with its first problem.
    ///
    /// A final line without a newline is decoded too. Blank lines (only white space) are skipped.
    public static func decode(
        _ bytes: UnsafeBufferPointer<UInt8>, firstLine: Int, defaultTime: EventTime, admission: EventAdmission = .anyEvent
    ) -> Decoded {
        var decoded = Decoded()
        decoded.events.reserveCapacity(bytes.count / 96)
        var start = 0
        var line = firstLine
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            var contentEnd = end
            if contentEnd > start, bytes[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            let content = UnsafeBufferPointer(rebasing: bytes[start..<contentEnd])
            if !content.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                if content.count > maximumLineBytes {
                    decoded.rejections.append(
                        Rejection(line: line, error: EventInputError(field: nil, "line is longer than \(maximumLineBytes) bytes")))
                } else {
                    do {
                        let event = try EventDecoder.decode(content, defaultTime: defaultTime)
                        if let problem = admission.problems(of: event).first {
                            decoded.rejections.append(Rejection(line: line, error: problem))
                        } else {
                            decoded.events.append(event)
                            decoded.eventLines.append(line)
                        }
                    } catch {
                        decoded.rejections.append(Rejection(line: line, error: error))
                    }
                }
            }
            decoded.lines += 1
            line += 1
            start = end + 1
        }
        return decoded
    }

    /// Decodes every non-blank line of `bytes`, refusing what `admission` does not take.
    public static func decode(_ bytes: [UInt8], firstLine: Int = 1, defaultTime: EventTime, admission: EventAdmission = .anyEvent) -> Decoded {
        bytes.withUnsafeBufferPointer { decode($0, firstLine: firstLine, defaultTime: defaultTime, admission: admission) }
    }
}

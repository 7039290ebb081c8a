/// A stretch of a segment that holds no valid frame, found while reading or recovering the log.
public struct LogDamage: Sendable, Hashable, CustomStringConvertible {
    /// What kind of damage it is.
    public enum Kind: String, Sendable, Hashable {
        /// Bytes in the middle of a segment with a valid frame after them (e.g. a bit flip):
        /// the events of the damaged frame are lost, the rest of the segment is read.
        case corruptFrame = "corrupt-frame"
        /// Bytes at the end of a segment with no valid frame after them: a write that a crash
        /// interrupted (never acknowledged), or damage at the very end.
        case tornTail = "torn-tail"
        /// A valid frame that another frame has replaced: written before an fdatasync failure
        /// and never acknowledged, then rewritten in the next segment.
        case superseded
        /// A frame whose CRC matches but whose payload does not decode.
        case undecodable
    }

    /// What kind of damage it is.
    public var kind: Kind
    /// The segment's file name.
    public var segment: String
    /// The damaged bytes of the segment.
    public var range: Range<Int64>
    /// Why the bytes were refused.
    public var reason: String

    /// Creates a damage record.
    public init(kind: Kind, segment: String, range: Range<Int64>, reason: String) {
        self.kind = kind
        self.segment = segment
        self.range = range
        self.reason = reason
    }

    public var description: String {
        "\(kind.rawValue) in \(segment) at bytes \(range.lowerBound)..<\(range.upperBound): \(reason)"
    }
}

/// A run of consecutive frames a ``FrameStore`` drops as one (a segment file of the segment
/// store): the retention chooses whole spans.
package struct FrameSpan: Sendable, Hashable {
    /// The sequence number of its first event (of the next one stored, while it has none).
    package var firstSequence: UInt64
    /// Bytes holding its frames and header (for a sealed segment found on open: its file size).
    package var bytes: Int64
    /// When it was started (a segment's header's creation time; when the header could not be read,
    /// the time the log was opened, which keeps it longer rather than shorter). The next span's
    /// creation is when this one took its last event.
    package var createdAtNanoseconds: Int64

    /// The span's name as it is stored and reported: its segment file's name.
    package var name: String { SegmentHeader.fileName(firstSequence: firstSequence) }

    /// A span from its parts.
    package init(firstSequence: UInt64, bytes: Int64, createdAtNanoseconds: Int64) {
        self.firstSequence = firstSequence
        self.bytes = bytes
        self.createdAtNanoseconds = createdAtNanoseconds
    }
}

/// A passed span the retention lets go, and why.
package struct FrameDrop: Sendable {
    /// The span.
    package var segment: FrameSpan
    /// When its last event was written: the next span's creation.
    package var sealedAtNanoseconds: Int64
    /// Why it goes.
    package var reason: SegmentRemoval.Reason
}

/// What dropping removed, and how it failed, if it did (it stops at the first failure; what it
/// removed before stays removed).
package struct FrameDropReport: Sendable {
    /// The spans removed, oldest first.
    package var removals: [SegmentRemoval] = []
    /// The failure that stopped it.
    package var failure: LogError?

    /// Nothing dropped yet.
    package init() {}

    /// Adds what `other` removed; the first failure is kept.
    mutating func merge(_ other: FrameDropReport) {
        removals += other.removals
        failure = failure ?? other.failure
    }
}

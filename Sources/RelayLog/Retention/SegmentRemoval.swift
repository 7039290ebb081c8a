/// One sealed segment that left the log: why, and whether a copy went to the archive first.
public struct SegmentRemoval: Sendable, Hashable {
    /// Why a segment left the log.
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        /// Every consumer had passed it and the retention age had run out (with no retention:
        /// as soon as every consumer had passed it).
        case expired
        /// Every consumer had passed it and the log needed room: over the retention quota, or an
        /// append would otherwise have passed the log's size limit.
        case quota
    }

    /// The segment's file name.
    public var segment: String
    /// Its first sequence number.
    public var firstSequence: UInt64
    /// Bytes it held (header and frames).
    public var bytes: Int64
    /// When its last event was written (the next segment's creation), in nanoseconds since the
    /// Unix epoch.
    public var sealedAtNanoseconds: Int64
    /// Why it left.
    public var reason: Reason
    /// Whether it was copied into the archive directory (durably) before it was deleted.
    public var archived: Bool

    /// A removal from its parts (a store other than segment files reports its spans this way).
    package init(segment: String, firstSequence: UInt64, bytes: Int64, sealedAtNanoseconds: Int64, reason: Reason, archived: Bool) {
        self.segment = segment
        self.firstSequence = firstSequence
        self.bytes = bytes
        self.sealedAtNanoseconds = sealedAtNanoseconds
        self.reason = reason
        self.archived = archived
    }
}

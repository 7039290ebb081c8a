/// What opening the log found and repaired.
public struct RecoveryReport: Sendable, Hashable {
    /// Segment files found.
    public var segments: Int = 0
    /// Valid frames found in the active (last) segment, which is the one fully verified on open.
    public var verifiedFrames: Int = 0
    /// Bytes of the active segment that were verified.
    public var verifiedBytes: Int64 = 0
    /// Damage found; torn tails were cut back after being copied to the quarantine.
    public var damage: [LogDamage] = []
    /// Bytes of a write a crash interrupted, removed from the end of the active segment's data
    /// (cut off, or overwritten with zeros inside preallocated space).
    public var truncatedBytes: Int64 = 0
    /// Leftover temporary files of an interrupted segment roll or cursor write, removed.
    public var removedTemporaryFiles: [String] = []
    /// The sequence number the next appended event gets.
    public var nextSequence: UInt64 = 1

    /// Creates an empty report.
    public init() {}
}

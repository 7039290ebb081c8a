import RelayCore

/// What a frame store hands its log for reading (``FrameStore/readFrames(from:archiveDirectory:)``):
/// the stored events from a sequence number on, in sequence order, each once, in batches.
///
/// A reader is a plain value owned by one consumer and moved to the thread that reads (a store's
/// reads may block). Consumers outside RelayLog never hold one: they read through
/// `LogFollower`, its `Steps` or `LogSnapshot`, so a second store changes none of them.
public protocol FrameReader: Sendable {
    /// The sequence number of the next event a read returns (or the first after it, when that one
    /// is no longer stored).
    var position: UInt64 { get }

    /// Reads up to `maximumEvents` events whose sequence numbers are below `limit`; fewer (possibly
    /// none) when the store holds no more yet. Damage passed over is reported in
    /// ``LogReadBatch/damage`` and reading goes on after it; registrations being erased come out as
    /// erased entries.
    ///
    /// - Throws: ``LogError`` when the store cannot be read past `position`.
    mutating func read(maximumEvents: Int, below limit: UInt64) throws(LogError) -> LogReadBatch

    /// Lets go of what the reader holds open; a later read opens it again.
    mutating func close()
}

extension FrameReader {
    /// Reads up to `maximumEvents` events, whatever their sequence numbers (``read(maximumEvents:below:)``
    /// without a limit: for a reader of files no process is writing).
    ///
    /// - Throws: ``LogError`` when the store cannot be read past `position`.
    public mutating func read(maximumEvents: Int) throws(LogError) -> LogReadBatch {
        try read(maximumEvents: maximumEvents, below: .max)
    }
}

/// The segment files' reader is the first store's.
extension LogReader: FrameReader {}

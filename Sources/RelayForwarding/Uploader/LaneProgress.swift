/// Which events of a lane are done, and how far its durable cursor may move.
///
/// Events finish out of order (requests run concurrently); the cursor may only pass the contiguous
/// run of finished events.
public struct LaneProgress: Sendable {
    /// The next sequence number to read.
    public internal(set) var next: UInt64
    /// Every event below this is done.
    public private(set) var contiguous: UInt64
    /// The position last saved in the cursor file.
    public internal(set) var durableCursor: UInt64
    /// Finished events at or after `contiguous`.
    private var completed = Set<UInt64>()

    init(start: UInt64) {
        next = start
        contiguous = start
        durableCursor = start
    }

    /// Events read beyond the point a crash would restart from: beyond the saved cursor for the
    /// normal uploader, beyond the finished run for a replay (which saves nothing).
    func unsynced(saves: Bool) -> UInt64 {
        next - (saves ? durableCursor : contiguous)
    }

    mutating func markDone(_ sequence: UInt64) {
        completed.insert(sequence)
        while completed.remove(contiguous) != nil { contiguous += 1 }
    }

    /// Sequence numbers `next ..< target` are not in the log (damage, or a range starting before it).
    mutating func skip(to target: UInt64) {
        guard target > next else { return }
        if contiguous == next {
            contiguous = target
        } else {
            for sequence in next..<target { completed.insert(sequence) }
        }
        next = target
        while completed.remove(contiguous) != nil { contiguous += 1 }
    }
}

/// The retention's side of the segment writer: which passed segments may go, and their removal
/// (archived first with an archive directory), oldest first.
extension SegmentWriter {
    /// A passed segment the retention lets go, and why.
    struct Expendable: Sendable {
        var segment: Segment
        /// When its last event was written: the next segment's creation.
        var sealedAtNanoseconds: Int64
        var reason: SegmentRemoval.Reason
    }

    /// What one retention pass removed, and how it failed, if it did (it stops at the first
    /// failure; what it removed before stays removed).
    struct RetentionPass: Sendable {
        var removals: [SegmentRemoval] = []
        var failure: LogError?

        mutating func merge(_ other: RetentionPass) {
            removals += other.removals
            failure = failure ?? other.failure
        }
    }

    /// The segments every consumer has passed (all events below `floor`; never the active one)
    /// that the retention lets go at `now`, oldest first, without touching a file: those whose
    /// last event is older than the retention age, and any more while the log takes over `quota`.
    func expendable(passedBelow floor: UInt64, keeping quota: Int64?, now: Int64) -> [Expendable] {
        Self.expendable(in: segments, retention: configuration.retention, passedBelow: floor, keeping: quota, now: now)
    }

    /// ``expendable(passedBelow:keeping:now:)`` of a list of segments (the writer's, or the copy
    /// its owner keeps while the writer is away).
    static func expendable(
        in segments: [Segment], retention: LogRetention, passedBelow floor: UInt64, keeping quota: Int64?, now: Int64
    ) -> [Expendable] {
        let age = retention.ageNanoseconds
        var total = segments.reduce(Int64(0)) { $0 + $1.bytes }
        var chosen: [Expendable] = []
        var index = 0
        while index + 1 < segments.count, segments[index + 1].firstSequence <= floor {
            let sealedAt = segments[index + 1].createdAtNanoseconds
            let reason: SegmentRemoval.Reason
            if now.subtractingReportingOverflow(sealedAt).partialValue >= age {
                reason = .expired
            } else if let quota, total > quota {
                reason = .quota
            } else {
                break
            }
            chosen.append(Expendable(segment: segments[index], sealedAtNanoseconds: sealedAt, reason: reason))
            total -= segments[index].bytes
            index += 1
        }
        return chosen
    }

    /// Removes `chosen`, oldest first, each only while it is still the oldest segment (another
    /// pass may have taken it): copied into the archive first when `archiving` (otherwise the
    /// caller copied it), then deleted; then syncs the directory.
    mutating func remove(_ chosen: [Expendable], archiving: Bool) -> RetentionPass {
        var pass = RetentionPass()
        for item in chosen {
            guard segments.count > 1, segments[0].firstSequence == item.segment.firstSequence else { continue }
            let name = item.segment.name
            let (fileSystem, segmentPath, archiveDirectory) = (fileSystem, path(name), archiving ? configuration.archiveDirectory : nil)
            do throws(LogError) {
                // Not while `wal rekey` rewrites it: its rename would bring the segment back.
                try SegmentRewriteLock.holding(walDirectory: directory, fileSystem: fileSystem) { () throws(LogError) in
                    if let archiveDirectory {
                        try SegmentArchive(directory: archiveDirectory, fileSystem: fileSystem).store(segmentAt: segmentPath, name: name)
                    }
                    do throws(FileSystemError) {
                        try fileSystem.remove(segmentPath)
                    } catch {
                        throw .fileSystem(error, context: "deleting passed segment \(name)")
                    }
                }
            } catch {
                pass.failure = error
                break
            }
            segments.removeFirst()
            pass.removals.append(
                SegmentRemoval(
                    segment: name, firstSequence: item.segment.firstSequence, bytes: item.segment.bytes,
                    sealedAtNanoseconds: item.sealedAtNanoseconds, reason: item.reason, archived: configuration.archiveDirectory != nil))
        }
        if !pass.removals.isEmpty {
            // What was deleted stays deleted, even after a later failure: make it durable.
            do {
                try fileSystem.synchronizeDirectory(directory)
            } catch {
                pass.failure = pass.failure ?? .fileSystem(error, context: "syncing \(directory)")
            }
        }
        return pass
    }

    /// The retention now, all on this thread (the writer's): for the room a commit needs.
    mutating func removeSegments(passedBelow floor: UInt64, keeping quota: Int64?) -> RetentionPass {
        remove(expendable(passedBelow: floor, keeping: quota, now: wallClock()), archiving: true)
    }

    /// The disk is full, and segments every consumer has passed are kept only for replays: new
    /// events come first. Removes at least `bytes` of them, oldest first; returns whether any went.
    mutating func makeRoom(for bytes: Int64, passedBelow floor: UInt64, retention: inout RetentionPass) -> Bool {
        let pass = removeSegments(passedBelow: floor, keeping: max(0, totalBytes - bytes))
        retention.merge(pass)
        return !pass.removals.isEmpty
    }
}

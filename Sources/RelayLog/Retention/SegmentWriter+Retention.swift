/// The retention's side of the segment writer: which passed segments may go, and their removal
/// (archived first with an archive directory), oldest first.
extension SegmentWriter {
    /// The segments every consumer has passed (all events below `floor`; never the active one)
    /// that the retention lets go at `now`, oldest first, without touching a file: those whose
    /// last event is older than the retention age, and any more while the log takes over `quota`.
    func expendable(passedBelow floor: UInt64, keeping quota: Int64?, now: Int64) -> [FrameDrop] {
        LogRetentionPass.choose(in: segments, retention: configuration.retention, passedBelow: floor, keeping: quota, now: now)
    }

    /// Removes `chosen`, oldest first, each only while it is still the oldest segment (another
    /// pass may have taken it): copied into the archive first when `archiving` (otherwise the
    /// caller copied it), then deleted; then syncs the directory.
    mutating func remove(_ chosen: [FrameDrop], archiving: Bool) -> FrameDropReport {
        var pass = FrameDropReport()
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
    mutating func removeSegments(passedBelow floor: UInt64, keeping quota: Int64?) -> FrameDropReport {
        remove(expendable(passedBelow: floor, keeping: quota, now: wallClock()), archiving: true)
    }

    /// The disk is full, and segments every consumer has passed are kept only for replays: new
    /// events come first. Removes at least `bytes` of them, oldest first; returns whether any went.
    mutating func makeRoom(for bytes: Int64, passedBelow floor: UInt64, retention: inout FrameDropReport) -> Bool {
        let pass = removeSegments(passedBelow: floor, keeping: max(0, totalBytes - bytes))
        retention.merge(pass)
        return !pass.removals.isEmpty
    }
}

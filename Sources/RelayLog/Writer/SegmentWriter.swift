import RelayCore

/// The log's on-disk writing: frames into the active segment, rolls, the size limit, and segment
/// deletion. Synchronous, and owned by one flush at a time (``WriteAheadLog`` moves it to its I/O
/// thread and back), so it needs no lock.
struct SegmentWriter: Sendable {
    /// One segment file of the log.
    struct Segment: Sendable, Hashable {
        var firstSequence: UInt64
        /// Bytes holding the header and frames (for a sealed segment found on open: its file size).
        var bytes: Int64
        var name: String { SegmentHeader.fileName(firstSequence: firstSequence) }
    }

    /// The segment being appended to.
    struct Active: Sendable {
        var handle: any FileHandle
        var firstSequence: UInt64
        /// End of the last frame known durable: the next frame is written here.
        var offset: Int64
        /// The file's size: past `offset` it holds only zeros written ahead of time (preallocation),
        /// so that appending overwrites allocated blocks instead of growing the file.
        var allocated: Int64
        /// Set when fdatasync failed or a failed write could not be undone: the descriptor is never
        /// trusted again and the next append rolls to a new segment.
        var abandoned = false
    }

    let fileSystem: any FileSystem
    let directory: String
    let configuration: LogConfiguration
    /// Every segment, oldest first; the last one is the active one when `active` is set.
    private(set) var segments: [Segment]
    private(set) var active: Active?

    init(fileSystem: any FileSystem, directory: String, configuration: LogConfiguration, segments: [Segment], active: Active?) {
        self.fileSystem = fileSystem
        self.directory = directory
        self.configuration = configuration
        self.segments = segments
        self.active = active
    }

    /// Bytes holding segment headers and frames; the size limit applies to these.
    var totalBytes: Int64 { segments.reduce(0) { $0 + $1.bytes } }

    /// Bytes the segment files take, the active segment's unused preallocation included.
    var allocatedBytes: Int64 {
        guard let current = active, !current.abandoned else { return totalBytes }
        return totalBytes + max(0, current.allocated - current.offset)
    }

    func path(_ name: String) -> String { "\(directory)/\(name)" }

    /// Writes already-encoded frames holding events from `firstSequence` and makes them durable.
    ///
    /// Returns once fdatasync succeeded. On failure nothing is acknowledged and the segment's
    /// durable end is unchanged.
    @discardableResult
    mutating func commit(_ frames: [UInt8], firstSequence: UInt64) throws(LogError) -> Duration {
        if let limit = configuration.maximumLogBytes {
            let used = totalBytes
            if used + Int64(frames.count) > limit { throw .logFull(usedBytes: used, limitBytes: limit) }
        }
        if needsRoll(forAdditional: Int64(frames.count)) {
            try roll(firstSequence: firstSequence)
        }
        guard var current = active else { throw .closed }
        do {
            try current.handle.write(frames, at: current.offset)
        } catch {
            // Cut back whatever part of the frame reached the file (and the preallocation with it);
            // if even that fails, stop using the file.
            do {
                try current.handle.truncate(to: current.offset)
                current.allocated = current.offset
            } catch {
                current.abandoned = true
            }
            active = current
            throw .writeFailed(error)
        }
        let dataEnd = current.offset + Int64(frames.count)
        if dataEnd > current.allocated {
            // Grow the allocation a step ahead in the same fdatasync as the frames: one journalled
            // sync per step, and every sync until the next step only overwrites allocated zeros.
            let target = allocationTarget(forDataEnd: dataEnd)
            // Preallocation is an optimisation: when it fails (a nearly full disk) the segment simply
            // grows with its frames, so the error is dropped and the allocation is not counted.
            current.allocated = target > dataEnd && (try? current.handle.writeZeros(dataEnd..<target)) != nil ? target : dataEnd
        }
        let syncStart = ContinuousClock.now
        do {
            try current.handle.synchronizeData()
        } catch {
            abandon(&current)
            active = current
            throw .syncFailed(error)
        }
        let syncDuration = ContinuousClock.now - syncStart
        current.offset = dataEnd
        active = current
        segments[segments.count - 1].bytes = current.offset
        return syncDuration
    }

    /// After a failed fdatasync the descriptor's state is unknown: best effort, cut the file back to
    /// its last durable frame through a fresh descriptor. Readers ignore what stays anyway, because
    /// the next segment starts at the same sequence number and supersedes it.
    private mutating func abandon(_ current: inout Active) {
        current.abandoned = true
        current.handle.close()
        if let fresh = try? fileSystem.open(path(SegmentHeader.fileName(firstSequence: current.firstSequence)), create: false) {
            try? fresh.truncate(to: current.offset)
            try? fresh.synchronizeData()
            fresh.close()
        }
    }

    private func needsRoll(forAdditional bytes: Int64) -> Bool {
        guard let current = active else { return true }
        if current.abandoned { return true }
        let hasFrames = current.offset > Int64(SegmentHeader.size)
        return hasFrames && current.offset + bytes > configuration.segmentBytes
    }

    /// Starts a new segment whose first event will be `firstSequence`: temporary file, header,
    /// fdatasync, rename, directory sync. Only then may frames go into it. The previous segment is
    /// cut back to its last frame (dropping its unused preallocation).
    mutating func roll(firstSequence: UInt64) throws(LogError) {
        let name = SegmentHeader.fileName(firstSequence: firstSequence)
        let finalPath = path(name)
        let temporaryPath = finalPath + ".tmp"
        let header = SegmentHeader(firstSequence: firstSequence, createdAtNanoseconds: SystemClock.wallNanoseconds())
        let handle: any FileHandle
        do {
            handle = try fileSystem.open(temporaryPath, create: true)
        } catch {
            throw .fileSystem(error, context: "creating segment \(name)")
        }
        do {
            try handle.truncate(to: 0)
            try handle.write(header.encoded(), at: 0)
            try handle.synchronizeData()
            try fileSystem.rename(temporaryPath, to: finalPath)
            try fileSystem.synchronizeDirectory(directory)
        } catch {
            handle.close()
            try? fileSystem.remove(temporaryPath)
            throw .fileSystem(error, context: "starting segment \(name)")
        }
        if let previous = active, !previous.abandoned {
            // Unsynced on purpose: if a crash undoes it, the zeros left behind read as a clean end.
            if previous.allocated > previous.offset { try? previous.handle.truncate(to: previous.offset) }
            previous.handle.close()
        }
        // An abandoned, still empty segment with the same first sequence was just replaced by the rename.
        if let last = segments.last, last.firstSequence == firstSequence { segments.removeLast() }
        segments.append(Segment(firstSequence: firstSequence, bytes: Int64(SegmentHeader.size)))
        active = Active(handle: handle, firstSequence: firstSequence, offset: Int64(SegmentHeader.size), allocated: Int64(SegmentHeader.size))
    }

    /// Where the active segment's allocation should end once its data ends at `end`: the next
    /// multiple of the preallocation step, within the segment size and the size limit.
    private func allocationTarget(forDataEnd end: Int64) -> Int64 {
        guard configuration.preallocateSegments else { return end }
        let step = max(1, configuration.preallocationStep)
        var target = (end + step - 1) / step * step
        target = min(target, configuration.segmentBytes)
        if let limit = configuration.maximumLogBytes {
            let others = segments.dropLast().reduce(Int64(0)) { $0 + $1.bytes }
            target = min(target, limit - others)
        }
        return max(target, end)
    }

    /// Deletes the oldest segments whose events are all below `sequence` (never the active one),
    /// oldest first, then syncs the directory. Returns the names deleted.
    mutating func removeSegments(below sequence: UInt64) throws(LogError) -> [String] {
        var removed: [String] = []
        while segments.count > 1, segments[1].firstSequence <= sequence {
            let name = segments[0].name
            do {
                try fileSystem.remove(path(name))
            } catch {
                throw .fileSystem(error, context: "deleting consumed segment \(name)")
            }
            segments.removeFirst()
            removed.append(name)
        }
        if !removed.isEmpty {
            do { try fileSystem.synchronizeDirectory(directory) } catch { throw .fileSystem(error, context: "syncing \(directory)") }
        }
        return removed
    }

    /// Closes the active segment's descriptor.
    mutating func close() {
        if let current = active, !current.abandoned { current.handle.close() }
        active = nil
    }
}

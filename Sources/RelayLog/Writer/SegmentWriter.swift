import RelayCore

/// The log's on-disk writing: frames into the active segment, rolls, the size limit, and segment
/// deletion. Synchronous, and owned by one flush at a time (``WriteAheadLog`` moves it to its I/O
/// thread and back), so it needs no lock.
struct SegmentWriter: Sendable {
    /// One segment file of the log: the segment store's span.
    typealias Segment = FrameSpan

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
        /// Set when a roll failed once its rename was under way: the next segment may exist under
        /// its final name, starting at the sequence this one would go on with, and would supersede
        /// any frame appended here. This segment takes no more frames; the next append rolls again.
        var sealed = false
    }

    let fileSystem: any FileSystem
    let directory: String
    let configuration: LogConfiguration
    /// Wall-clock nanoseconds since the Unix epoch: segment creation times and retention ages
    /// (tests pass a clock they control).
    let wallClock: @Sendable () -> Int64
    /// Every segment, oldest first; the last one is the active one when `active` is set. Set
    /// here and by the retention (SegmentWriter+Retention.swift), which removes the oldest.
    var segments: [Segment]
    private(set) var active: Active?
    /// Seals the frames of commits with the newest key, when the log is encrypted. Its salt is
    /// drawn again after a failed commit (``FrameSealer``); it goes with the writer to the I/O
    /// thread, where commits encode their frames.
    var sealer: FrameSealer?

    init(
        fileSystem: any FileSystem, directory: String, configuration: LogConfiguration, segments: [Segment], active: Active?,
        wallClock: @escaping @Sendable () -> Int64 = SystemClock.wallNanoseconds
    ) {
        self.fileSystem = fileSystem
        self.directory = directory
        self.configuration = configuration
        self.segments = segments
        self.active = active
        self.wallClock = wallClock
        self.sealer = configuration.encryption.map { FrameSealer(key: $0.newest) }
    }

    /// The most bytes the log keeps before passed segments make room: the smaller of the size
    /// limit and the retention quota.
    private var roomBytes: Int64? {
        switch (configuration.maximumLogBytes, configuration.retention.bytes) {
        case (let limit?, let quota?): min(limit, quota)
        case (let limit, let quota): limit ?? quota
        }
    }

    /// Bytes holding segment headers and frames; the size limit applies to these.
    var totalBytes: Int64 { segments.reduce(0) { $0 + $1.bytes } }

    /// What the log's owner reports of the writer: its segments, data bytes and bytes on disk.
    struct Figures: Sendable {
        var segments: Int
        /// ``SegmentWriter/totalBytes``.
        var dataBytes: Int64
        /// Bytes the segment files take, the active segment's unused preallocation included.
        var diskBytes: Int64
    }

    /// The figures now (one pass over the segments).
    var figures: Figures {
        let data = totalBytes
        guard let current = active, !current.abandoned else { return Figures(segments: segments.count, dataBytes: data, diskBytes: data) }
        return Figures(segments: segments.count, dataBytes: data, diskBytes: data + max(0, current.allocated - current.offset))
    }

    func path(_ name: String) -> String { "\(directory)/\(name)" }

    /// The frames of a group commit (``Frame/encodeGroup(_:firstSequence:compressionLevel:sealer:tallyingTenants:)``),
    /// sealed when the log is encrypted.
    func encode(_ groups: [[Event]], firstSequence: UInt64, compressionLevel: Int32, tallyingTenants: Bool) throws(LogError) -> (
        bytes: [UInt8], frames: [Frame.Written], tenantBytes: [TenantName: Int64]
    ) {
        guard let sealer else {
            return Frame.encodeGroup(groups, firstSequence: firstSequence, compressionLevel: compressionLevel, tallyingTenants: tallyingTenants)
        }
        do {
            return try Frame.encodeGroup(
                groups, firstSequence: firstSequence, compressionLevel: compressionLevel, sealer: sealer, tallyingTenants: tallyingTenants)
        } catch {
            throw .sealingFailed(error)
        }
    }

    /// Writes already-encoded frames holding events from `firstSequence` and makes them durable.
    ///
    /// Returns once fdatasync succeeded. On failure nothing is acknowledged and the segment's
    /// durable end is unchanged.
    ///
    /// When the frames would take the log past its size limit or the retention quota, or meet a
    /// full disk, segments every consumer has passed (all below `passedBelow`) go first, oldest
    /// first, into `retention`, unless `mayRemove` is false (a retention pass is under way on
    /// another thread). Failing to remove one (a broken archive) fails the commit only when the
    /// size limit or the disk then leaves no room; the failure is in `retention` either way.
    @discardableResult
    mutating func commit(
        _ frames: [UInt8], firstSequence: UInt64, passedBelow floor: UInt64 = 0, mayRemove: Bool = true, retention: inout FrameDropReport
    ) throws(LogError) -> Placement {
        let floor = mayRemove ? floor : 0
        // Without a size limit or a quota (the default) a commit does not sum the segments' sizes.
        if let room = roomBytes {
            var used = totalBytes
            if used + Int64(frames.count) > room {
                retention.merge(removeSegments(passedBelow: floor, keeping: room - Int64(frames.count)))
                used = totalBytes
            }
            // A size limit makes `roomBytes` non-nil, so it is checked here or not at all.
            if let limit = configuration.maximumLogBytes, used + Int64(frames.count) > limit {
                throw .logFull(usedBytes: used, limitBytes: limit)
            }
        }
        if needsRoll(forAdditional: Int64(frames.count)) {
            do {
                try roll(firstSequence: firstSequence)
            } catch {
                guard case .fileSystem(let cause, _) = error, LogLayout.noSpaceErrnos.contains(cause.errno),
                    makeRoom(for: Int64(frames.count), passedBelow: floor, retention: &retention)
                else { throw error }
                try roll(firstSequence: firstSequence)
            }
        }
        guard var current = active else { throw .closed }
        do {
            try write(frames, into: &current)
        } catch  where LogLayout.noSpaceErrnos.contains(error.errno) && !current.abandoned {
            guard makeRoom(for: Int64(frames.count), passedBelow: floor, retention: &retention) else { throw .writeFailed(error) }
            guard var again = active else { throw .closed }
            do {
                try write(frames, into: &again)
            } catch {
                throw .writeFailed(error)
            }
            current = again
        } catch {
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
        let placement = Placement(segment: current.firstSequence, offset: current.offset, synchronizeDuration: syncDuration)
        current.offset = dataEnd
        active = current
        segments[segments.count - 1].bytes = current.offset
        return placement
    }

    /// Where a commit's frames went, and how long their fdatasync took.
    struct Placement {
        /// The first sequence number of the segment they are in (its name).
        var segment: UInt64
        /// The offset of their first byte in that segment.
        var offset: Int64
        /// The fdatasync's duration.
        var synchronizeDuration: Duration
    }

    /// Writes `frames` at the active segment's durable end; on failure cuts back whatever part of
    /// them reached the file (and the preallocation with it), and if even that fails stops using
    /// the file. `current` is stored back as `active` either way.
    private mutating func write(_ frames: [UInt8], into current: inout Active) throws(FileSystemError) {
        do {
            try current.handle.write(frames, at: current.offset)
        } catch {
            do {
                try current.handle.truncate(to: current.offset)
                current.allocated = current.offset
            } catch {
                current.abandoned = true
            }
            active = current
            throw error
        }
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

    /// Takes no more frames into the active segment (if it has any): the next commit rolls.
    mutating func sealActive() {
        if let current = active, current.offset > Int64(SegmentHeader.size) { active?.sealed = true }
    }

    private func needsRoll(forAdditional bytes: Int64) -> Bool {
        guard let current = active else { return true }
        if current.abandoned || current.sealed { return true }
        let hasFrames = current.offset > Int64(SegmentHeader.size)
        return hasFrames && current.offset + bytes > configuration.segmentBytes
    }

    /// Starts a new segment whose first event will be `firstSequence`: temporary file, header,
    /// fdatasync, rename, directory sync. Only then may frames go into it. The previous segment is
    /// cut back to its last frame (dropping its unused preallocation). When the roll fails at or
    /// after the rename, the previous segment is sealed, so that the next append rolls again.
    mutating func roll(firstSequence: UInt64) throws(LogError) {
        let name = SegmentHeader.fileName(firstSequence: firstSequence)
        let finalPath = path(name)
        let temporaryPath = finalPath + ".tmp"
        let header = SegmentHeader(firstSequence: firstSequence, createdAtNanoseconds: wallClock())
        let handle: any FileHandle
        do {
            handle = try fileSystem.open(temporaryPath, create: true)
        } catch {
            throw .fileSystem(error, context: "creating segment \(name)")
        }
        var renaming = false
        do {
            try handle.truncate(to: 0)
            try handle.write(header.encoded(), at: 0)
            try handle.synchronizeData()
            renaming = true
            try fileSystem.rename(temporaryPath, to: finalPath)
            try fileSystem.synchronizeDirectory(directory)
        } catch {
            handle.close()
            if renaming {
                // The new, empty segment may be on disk under its final name: frames appended to the
                // previous segment from `firstSequence` on would be read as superseded by it.
                active?.sealed = true
            }
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
        segments.append(Segment(firstSequence: firstSequence, bytes: Int64(SegmentHeader.size), createdAtNanoseconds: header.createdAtNanoseconds))
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

    /// Closes the active segment's descriptor.
    mutating func close() {
        if let current = active, !current.abandoned { current.handle.close() }
        active = nil
    }
}

import RelayCore

/// Opening the log after any kind of stop: finds the segments, verifies the active one, cuts a
/// torn tail back to the last valid frame (after copying it to the quarantine), and works out the
/// next sequence number. It never refuses to open and never needs a person to delete files.
enum LogRecovery {
    static func recover(
        fileSystem: any FileSystem, walDirectory: String, quarantine: Quarantine, configuration: LogConfiguration,
        sequenceFloor: UInt64, now: String, wallClock: @escaping @Sendable () -> Int64 = SystemClock.wallNanoseconds
    ) throws(LogError) -> (SegmentWriter, RecoveryReport) {
        let openedAt = wallClock()
        var report = RecoveryReport()
        let names: [String]
        do {
            try fileSystem.createDirectory(walDirectory)
            names = try fileSystem.listDirectory(walDirectory)
        } catch {
            throw .fileSystem(error, context: "listing the log directory")
        }
        for name in names where name.hasSuffix(".wal.tmp") {
            // A roll that did not finish holds only a segment header: nothing acknowledged is in it.
            do { try fileSystem.remove("\(walDirectory)/\(name)") } catch { throw .fileSystem(error, context: "removing \(name)") }
            report.removedTemporaryFiles.append(name)
        }
        var segments: [SegmentWriter.Segment] = []
        for name in names {
            guard let first = SegmentHeader.firstSequence(fromFileName: name) else { continue }
            segments.append(SegmentWriter.Segment(firstSequence: first, bytes: 0, createdAtNanoseconds: openedAt))
        }
        segments.sort { $0.firstSequence < $1.firstSequence }
        report.segments = segments.count
        for index in segments.indices {
            let path = "\(walDirectory)/\(segments[index].name)"
            do {
                let handle = try fileSystem.open(path, create: false)
                defer { handle.close() }
                // The active segment's size is what its verification below finds.
                if index < segments.count - 1 { segments[index].bytes = try handle.size() }
                // The retention's clock; a damaged header keeps the time of this open.
                if let header = try SegmentHeader.read(from: handle) {
                    segments[index].createdAtNanoseconds = header.createdAtNanoseconds
                }
            } catch {
                throw .fileSystem(error, context: "opening segment \(segments[index].name)")
            }
        }
        var nextSequence = max(1, sequenceFloor)
        var active: SegmentWriter.Active?
        if let last = segments.last {
            let (tail, lastEnd) = try verifyActive(
                last, fileSystem: fileSystem, walDirectory: walDirectory, quarantine: quarantine, report: &report, now: now
            )
            segments[segments.count - 1].bytes = tail.offset
            active = tail
            nextSequence = max(nextSequence, lastEnd)
        }
        report.nextSequence = nextSequence
        let writer = SegmentWriter(
            fileSystem: fileSystem, directory: walDirectory, configuration: configuration, segments: segments, active: active,
            wallClock: wallClock
        )
        return (writer, report)
    }

    /// Walks every frame of the last segment; returns it ready for appending and the sequence after its last event.
    private static func verifyActive(
        _ segment: SegmentWriter.Segment, fileSystem: any FileSystem, walDirectory: String, quarantine: Quarantine,
        report: inout RecoveryReport, now: String
    ) throws(LogError) -> (SegmentWriter.Active, UInt64) {
        let name = segment.name
        let path = "\(walDirectory)/\(name)"
        do {
            let handle = try fileSystem.open(path, create: false)
            var size = try handle.size()
            if size < Int64(SegmentHeader.size) {
                // The header is written and synced before the rename that gives the file its name;
                // a shorter file can only be damage. Rewrite the header so appends can continue.
                let damage = LogDamage(kind: .tornTail, segment: name, range: 0..<size, reason: "segment shorter than its header")
                try quarantine.keep(try handle.read(at: 0, count: Int(size)), damage: damage, now: now)
                report.damage.append(damage)
                try handle.truncate(to: 0)
                try handle.write(
                    SegmentHeader(firstSequence: segment.firstSequence, createdAtNanoseconds: segment.createdAtNanoseconds).encoded(), at: 0)
                try handle.synchronizeData()
                size = Int64(SegmentHeader.size)
            }
            var walker = try FrameWalker(handle: handle)
            var end = segment.firstSequence
            var durableEnd = Int64(SegmentHeader.size)
            walking: while true {
                switch try walker.next() {
                case .frame(let header, let offset, _):
                    report.verifiedFrames += 1
                    end = max(end, header.endSequence)
                    durableEnd = offset + Int64(header.frameSize)
                case .damaged(let range, let reason):
                    let damage = LogDamage(kind: .corruptFrame, segment: name, range: range, reason: reason)
                    if !quarantine.contains(damage) {
                        try quarantine.keep(try handle.read(at: range.lowerBound, count: range.count), damage: damage, now: now)
                    }
                    report.damage.append(damage)
                case .damagedTail(let range, let reason):
                    let damage = LogDamage(kind: .tornTail, segment: name, range: range, reason: reason)
                    try quarantine.keep(try handle.read(at: range.lowerBound, count: range.count), damage: damage, now: now)
                    report.damage.append(damage)
                    if range.upperBound >= size {
                        try handle.truncate(to: range.lowerBound)
                        size = range.lowerBound
                    } else {
                        // Inside preallocated space: zero the torn bytes and keep the allocation, so
                        // no stale byte can follow the frames appended from here on.
                        try handle.writeZeros(range)
                    }
                    try handle.synchronizeData()
                    report.truncatedBytes += Int64(range.count)
                    durableEnd = range.lowerBound
                    break walking
                case .end:
                    break walking
                }
            }
            report.verifiedBytes = durableEnd
            let active = SegmentWriter.Active(
                handle: handle, firstSequence: segment.firstSequence, offset: durableEnd, allocated: max(size, durableEnd))
            return (active, end)
        } catch {
            throw .fileSystem(error, context: "recovering segment \(name)")
        }
    }
}

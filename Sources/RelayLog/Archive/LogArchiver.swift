/// `wal archive`: copies the log's sealed segments into an archive on demand, beside a running
/// server if need be (sealed segments never change; one deleted meanwhile is reported, not
/// copied). The log itself is left as it is: its retention deletes segments in its own time.
public enum LogArchiver {
    /// What one run did, segment by segment.
    public struct Report: Sendable, Hashable, Encodable {
        /// Segments copied in.
        public var copied: [String] = []
        /// Segments the archive already held, byte for byte.
        public var alreadyArchived: [String] = []
        /// Segments left out, and why.
        public var skipped: [Skipped] = []
        /// Bytes copied.
        public var bytesCopied: Int64 = 0

        /// A segment left out.
        public struct Skipped: Sendable, Hashable, Encodable {
            /// Its file name.
            public var segment: String
            /// Why.
            public var reason: String
        }
    }

    /// Copies every sealed segment of `walDirectory` (every one but the newest) whose last event
    /// was written before `sealedBefore` (nanoseconds since the Unix epoch; `nil`: all) into
    /// `archive`, oldest first.
    ///
    /// - Throws: ``LogError`` for the first segment that cannot be copied (those before it are
    ///   in the archive, durably).
    public static func archive(
        walDirectory: String, into archive: SegmentArchive, sealedBefore: Int64?, fileSystem: any FileSystem = PosixFileSystem(),
        onSegment: (String, SegmentArchive.Outcome) -> Void = { _, _ in }
    ) throws(LogError) -> Report {
        let starts: [UInt64]
        do {
            starts = try SegmentListing.list(walDirectory: walDirectory, archiveDirectory: nil, fileSystem: fileSystem).starts
        } catch {
            throw .fileSystem(error, context: "listing \(walDirectory)")
        }
        var report = Report()
        for (index, start) in starts.enumerated().dropLast() {
            let name = SegmentHeader.fileName(firstSequence: start)
            let next = "\(walDirectory)/\(SegmentHeader.fileName(firstSequence: starts[index + 1]))"
            if let sealedBefore {
                // A segment took its last event when the next one was created.
                guard let sealedAt = creationTime(of: next, fileSystem: fileSystem) else {
                    report.skipped.append(
                        .init(segment: name, reason: "when its last event was written is unknown (the next segment's header is unreadable)"))
                    continue
                }
                guard sealedAt < sealedBefore else { break }
            }
            let path = "\(walDirectory)/\(name)"
            guard fileSystem.exists(path) else {
                report.skipped.append(.init(segment: name, reason: "deleted by the log's retention while archiving"))
                continue
            }
            let outcome = try archive.store(segmentAt: path, name: name)
            switch outcome {
            case .copied:
                report.copied.append(name)
                if let handle = try? fileSystem.open("\(archive.directory)/\(name)", create: false) {
                    report.bytesCopied += (try? handle.size()) ?? 0
                    handle.close()
                }
            case .alreadyArchived: report.alreadyArchived.append(name)
            }
            onSegment(name, outcome)
        }
        return report
    }

    /// The creation time in the header of the segment at `path`, or `nil`.
    static func creationTime(of path: String, fileSystem: any FileSystem) -> Int64? {
        guard let handle = try? fileSystem.open(path, create: false) else { return nil }
        defer { handle.close() }
        return (try? SegmentHeader.read(from: handle))??.createdAtNanoseconds
    }
}

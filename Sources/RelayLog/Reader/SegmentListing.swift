/// The segments of a log directory, with those of an archive filling in the ones the log no
/// longer has: what readers, `replay --from-archive` and `stats --rebuild --from-archive` read.
struct SegmentListing: Sendable {
    /// First sequence numbers of every segment, ascending.
    var starts: [UInt64]
    /// Those read from the archive.
    var archivedStarts: Set<UInt64>

    /// The path of the segment starting at `start`.
    func path(of start: UInt64, walDirectory: String, archiveDirectory: String?) -> String {
        let directory = archivedStarts.contains(start) ? archiveDirectory ?? walDirectory : walDirectory
        return "\(directory)/\(SegmentHeader.fileName(firstSequence: start))"
    }

    /// Lists `walDirectory` (a missing one is empty when an archive is given) and `archiveDirectory`.
    static func list(walDirectory: String, archiveDirectory: String?, fileSystem: any FileSystem) throws(FileSystemError) -> SegmentListing {
        var logStarts: [UInt64] = []
        do {
            logStarts = try fileSystem.listDirectory(walDirectory).compactMap(SegmentHeader.firstSequence(fromFileName:))
        } catch  where archiveDirectory != nil && error.errno == LogLayout.noSuchFileErrno {
            logStarts = []
        }
        guard let archiveDirectory else { return SegmentListing(starts: logStarts.sorted(), archivedStarts: []) }
        let archived = Set(try fileSystem.listDirectory(archiveDirectory).compactMap(SegmentHeader.firstSequence(fromFileName:)))
            .subtracting(logStarts)
        return SegmentListing(starts: (logStarts + archived).sorted(), archivedStarts: archived)
    }
}

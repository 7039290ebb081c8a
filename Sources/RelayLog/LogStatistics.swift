/// Counters of what the log did since it was opened.
public struct LogStatistics: Sendable, Hashable {
    /// Events acknowledged.
    public var events = 0
    /// Group commits (each one fdatasync).
    public var commits = 0
    /// Frames written.
    public var frames = 0
    /// Frame bytes written.
    public var bytes: Int64 = 0
    /// Group commits that failed (nothing acknowledged).
    public var failedCommits = 0
    /// Appends refused because too many events were pending.
    public var overloadRejections = 0
    /// Appends refused because their tenant's share of the log was full.
    public var tenantRejections = 0
    /// Passed segments removed because the retention age ran out (or, without retention, at once).
    public var segmentsExpired = 0
    /// Passed segments removed early because the log needed room (quota or size limit).
    public var segmentsRemovedForRoom = 0
    /// Removed segments copied into the archive first.
    public var segmentsArchived = 0

    mutating func recordRemovals(_ removals: [SegmentRemoval]) {
        for removal in removals {
            switch removal.reason {
            case .expired: segmentsExpired += 1
            case .quota: segmentsRemovedForRoom += 1
            }
            if removal.archived { segmentsArchived += 1 }
        }
    }

    mutating func recordCommit(events: Int, bytes: Int, frames: Int) {
        self.events += events
        self.commits += 1
        self.frames += frames
        self.bytes += Int64(bytes)
    }
}

/// One successful group commit, as reported to a commit observer.
public struct CommitReport: Sendable, Hashable {
    /// Events acknowledged by the commit.
    public var events: Int
    /// Frame bytes written.
    public var bytes: Int
    /// Frames written.
    public var frames: Int
    /// How long the fdatasync took.
    public var synchronizeDuration: Duration
}

extension WriteAheadLog {
    /// Applies the retention now: removes (or archives) the segments every consumer has passed
    /// whose age or the quota says they may go. Cursor commits do this too; a server calls it
    /// now and then so that an idle log still expires its old segments.
    ///
    /// - Throws: ``LogError`` when deleting or archiving fails (what was removed before stays
    ///   removed; the rest is tried again next time).
    public func applyRetention() async throws(LogError) {
        try await removeConsumedSegments()
    }

    /// One retention pass at a time, and it never waits for the writer, so a consumer's cursor
    /// commit never waits behind group commits: it chooses from the store's extent as of its
    /// last answer, has the store archive them (if there is an archive) on a thread of its own
    /// while group commits go on (a commit removes nothing meanwhile), then has them dropped, at
    /// once when the writer is home, else by the next group commit.
    func removeConsumedSegments() async throws(LogError) {
        guard machine.retentionPassBegins() else { return }
        defer { perform(machine.retentionPassEnded()) }
        let chosen = retentionPass.choose(
            from: storeExtent, retention: configuration.retention, passedBelow: consumerRegistry.passedFloor, now: wallClock())
        guard !chosen.isEmpty || (retentionPass.hasHandedOff && machine.writer == .home) else { return }
        var report = FrameDropReport()
        if store.keepsArchive, !chosen.isEmpty {
            let (archived, failure) = await store.archive(chosen)
            report.failure = failure
            retentionPass.handOff(archived)
        } else {
            retentionPass.handOff(chosen)
        }
        // Not home: a group commit has the writer, and takes the deletions along.
        if retentionPass.hasHandedOff, machine.removalDeparts() {
            let outcome = await store.dropFrames(retentionPass.takeHandedOff())
            storeExtent = outcome.extent
            perform(machine.removalReturned())
            var dropped = outcome.report
            dropped.merge(report)
            report = dropped
        }
        reportDrops(report, during: "applying the retention")
        if let failure = report.failure { throw failure }
    }

    /// Logs and counts what a drop removed and how it failed, and tells the removal observer.
    func reportDrops(_ report: FrameDropReport, during activity: String) {
        LogRetentionPass.report(
            report, during: activity, oldest: oldestSequence, archiveDirectory: configuration.archiveDirectory, logger: logger,
            statistics: &statistics)
        if !report.removals.isEmpty { removalObserver?(report.removals) }
    }
}

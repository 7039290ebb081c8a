import Logging

/// The retention's choices and their report: which passed spans of a ``FrameStore`` may go, the
/// spans chosen while the store was busy (handed to its next append), and what a pass logs and
/// counts.
///
/// The ``WriteAheadLog`` runs one pass at a time (``LogWriterStateMachine/retentionPassBegins()``)
/// and never waits for the store: it chooses from the store's extent as of its last answer, has
/// the store archive them (off the writer's thread), then drops them at once when the store is
/// idle, or hands them to the next append.
struct LogRetentionPass: Sendable {
    /// Spans chosen (and archived) while the store was busy: the next append drops them, or the
    /// next pass does.
    private(set) var handedOff: [FrameDrop] = []

    /// Whether spans wait for a drop.
    var hasHandedOff: Bool { !handedOff.isEmpty }

    /// The spans of `extent` the retention lets go now that were not chosen before.
    func choose(from extent: FrameStoreExtent, retention: LogRetention, passedBelow floor: UInt64, now: Int64) -> [FrameDrop] {
        let handed = Set(handedOff.map(\.segment.firstSequence))
        return Self.choose(in: extent.spans, retention: retention, passedBelow: floor, keeping: retention.bytes, now: now)
            .filter { !handed.contains($0.segment.firstSequence) }
    }

    /// Adds archived spans to drop.
    mutating func handOff(_ spans: [FrameDrop]) {
        handedOff += spans
    }

    /// Takes the spans to drop (an append or a drop takes them to the store).
    mutating func takeHandedOff() -> [FrameDrop] {
        defer { handedOff = [] }
        return handedOff
    }

    /// The spans every consumer has passed (all events below `floor`; never the last one, which
    /// is being appended to) that `retention` lets go at `now`, oldest first: those whose last
    /// event is older than the retention age, and any more while the spans take over `quota`.
    static func choose(
        in segments: [FrameSpan], retention: LogRetention, passedBelow floor: UInt64, keeping quota: Int64?, now: Int64
    ) -> [FrameDrop] {
        let age = retention.ageNanoseconds
        var total = segments.reduce(Int64(0)) { $0 + $1.bytes }
        var chosen: [FrameDrop] = []
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
            chosen.append(FrameDrop(segment: segments[index], sealedAtNanoseconds: sealedAt, reason: reason))
            total -= segments[index].bytes
            index += 1
        }
        return chosen
    }

    /// Logs and counts what dropping removed, and how it failed: `activity` says when it happened,
    /// `oldest` is the first sequence kept after it.
    static func report(
        _ report: FrameDropReport, during activity: String, oldest: UInt64, archiveDirectory: String?, logger: Logger,
        statistics: inout LogStatistics
    ) {
        if let failure = report.failure {
            logger.error(
                "could not remove a passed segment; it stays in the log and is tried again later",
                metadata: [
                    "while": "\(activity)", "error": "\(failure)",
                ])
        }
        guard !report.removals.isEmpty else { return }
        for reason in SegmentRemoval.Reason.allCases {
            let removals = report.removals.filter { $0.reason == reason }
            guard let last = removals.last else { continue }
            statistics.recordRemovals(removals)
            let verb = last.archived ? "archived and deleted" : "deleted"
            let message: Logger.Message =
                switch reason {
                case .expired: "\(verb) segments every consumer has passed and the retention no longer keeps"
                case .quota: "\(verb) segments every consumer has passed before their retention ran out: the log needed room"
                }
            logger.log(
                level: reason == .quota ? .notice : .info, message,
                metadata: [
                    "segments": "\(removals.map(\.segment).joined(separator: ","))", "bytes": "\(removals.reduce(0) { $0 + $1.bytes })",
                    "first-kept-sequence": "\(oldest)", "archive": "\(archiveDirectory ?? "none")",
                ])
        }
    }
}

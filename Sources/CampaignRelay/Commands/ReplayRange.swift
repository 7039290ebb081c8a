import RelayLog

/// A replay's range set against what the log still holds (``LogExtent``): whether any of it is
/// there, and what is missing, so that `replay` never sends nothing in silence.
struct ReplayRange: Sendable {
    /// Sequence numbers asked for (`--to` made exclusive; open-ended: `UInt64.max`).
    var sequences: Range<UInt64>
    /// Event times asked for, when the range is by time.
    var times: Range<Int64>?
    /// What the events are read from, for messages (``StoredLog/source``).
    var source = "the log"
    /// Whether ``source`` names more than one place (an archive beside the log).
    var plural = false

    /// The range of `sequences` and `times` in `stored`.
    init(sequences: Range<UInt64>, times: Range<Int64>?, in stored: StoredLog) {
        self.sequences = sequences
        self.times = times
        self.source = stored.source
        self.plural = stored.plural
    }

    /// "the log keeps …", "the log and the archive keep …".
    func keeps(_ extent: LogExtent) -> String { "\(source) \(plural ? "keep" : "keeps") \(extent.description)" }

    /// Why nothing can be replayed: the whole range is outside the log.
    struct Gone: Error, CustomStringConvertible {
        var description: String
    }

    /// What of the range is not in the log, as sentences ("sequences 1 to 1200 are no longer in
    /// the log"); empty when all of it is.
    ///
    /// - Throws: ``Gone`` when none of the range is in the log.
    func missing(in extent: LogExtent) throws(Gone) -> [String] {
        guard let first = extent.firstSequence, let last = extent.lastSequence else {
            throw Gone(description: "\(source) \(plural ? "hold" : "holds") no event: there is nothing to replay")
        }
        let kept = keeps(extent)
        let asked =
            sequences.upperBound == .max
            ? "sequences from \(sequences.lowerBound)" : "sequences \(sequences.lowerBound) to \(sequences.upperBound - 1)"
        if sequences.upperBound <= first {
            throw Gone(
                description:
                    "\(asked) are no longer in \(source): \(kept). Segments every consumer (uploader, aggregator) has passed are kept for --retain (default 24h) within --retain-bytes, then deleted, or archived with --archive-dir (read an archive with --from-archive)"
            )
        }
        if sequences.lowerBound > last {
            throw Gone(description: "\(asked) are not in \(source): \(kept)")
        }
        var missing: [String] = []
        // A range by time alone spans every sequence number: only the time can be missing.
        let bySequence = times == nil || sequences != 1..<UInt64.max
        if bySequence, sequences.lowerBound < first {
            missing.append("sequences \(sequences.lowerBound) to \(first - 1) are no longer in \(source) (\(kept))")
        }
        if bySequence, sequences.upperBound != .max, sequences.upperBound - 1 > last {
            missing.append("sequences \(last + 1) to \(sequences.upperBound - 1) are not in \(source) (it ends at \(last))")
        }
        if let times, !extent.startsAtOne, let firstTime = extent.firstEventTime, times.lowerBound < firstTime.nanosecondsSinceEpoch {
            missing.append(
                "events before \(firstTime.rfc3339) may have been in segments deleted already (\(source) \(plural ? "start" : "starts") at sequence \(first), not 1)"
            )
        }
        return missing
    }
}

import RelayAggregates
import RelayCore
import RelayIO
public import RelayLog

/// `replay --to-aggregates`: counts a range of the log (and of an archive) into a database of its
/// own, with the aggregator's schema and rules, so it can be set beside `aggregates.sqlite` (or
/// another relay's counts) and compared. Reads only: it works beside a running server.
public enum RangeRecount {
    /// Counts the events of `sequences` (with event times in `times`, when given) found in
    /// `stored` (files, an archive, a stream in PostgreSQL) into a new database at `path`.
    ///
    /// - Throws: ``AggregatorError/files(_:)`` when `path` already exists (nothing is mixed
    ///   into an existing database), ``AggregatorError/log(_:)`` and
    ///   ``AggregatorError/database(_:)`` when reading or counting fails.
    public static func count(
        _ stored: StoredLog, sequences: Range<UInt64>, times: Range<Int64>?, into path: String, batchSize: Int = 50_000,
        progress: (@Sendable (CatchUpProgress) -> Void)? = nil
    ) async throws(AggregatorError) -> CatchUpSummary {
        try await BlockingExecutor(name: "recount").run { () throws(AggregatorError) -> CatchUpSummary in
            let fileSystem = PosixFileSystem()
            if fileSystem.exists(path) {
                throw .files(
                    FileSystemError(
                        operation: "create", path: path, errno: 17, reason: "already exists: remove it or give another --to-aggregates file"))
            }
            let started = SystemClock.monotonicNanoseconds()
            let first = max(sequences.lowerBound, 1)
            let store = try AggregateStore(path: path, firstSequence: first, pageCacheBytes: Aggregator.defaultPageCacheBytes)
            defer { store.close() }
            var reader = stored.steps(from: first)
            defer { reader.close() }
            var summary = CatchUpSummary(startPosition: first, endPosition: first)
            var position = first
            while position < sequences.upperBound {
                let batch: LogReadBatch
                do throws(LogError) {
                    batch = try reader.read(maximumEvents: batchSize, below: sequences.upperBound)
                } catch {
                    throw .log(error)
                }
                guard !batch.events.isEmpty else { break }
                let kept = times.map { range in batch.events.filter { range.contains($0.event.time.nanosecondsSinceEpoch) } } ?? batch.events
                try store.apply(CountDeltas(kept), from: position, to: batch.position)
                summary.events += kept.count
                summary.transactions += 1
                position = batch.position
                summary.endPosition = position
                summary.seconds = Double(SystemClock.monotonicNanoseconds() - started) / 1e9
                progress?(CatchUpProgress(position: position, end: sequences.upperBound, events: summary.events, seconds: summary.seconds))
            }
            summary.seconds = Double(SystemClock.monotonicNanoseconds() - started) / 1e9
            return summary
        }
    }
}

package import Logging
package import RelayCore
package import RelayIO

/// The loop of a consumer that keeps its position in its own store (SQLite's and PostgreSQL's
/// aggregators, a rebuild): read the log in batches up to its durable end, decoding the next batch
/// on a thread of its own while the consumer applies this one, skip damaged bytes (the log reports them once),
/// move a position past each applied batch, and keep the consumer's retention cursor behind it.
package enum LogCatchUp {
    /// Why a catch-up stopped early.
    package enum Failure<ApplyError: Error>: Error {
        /// Reading the log failed.
        case log(LogError)
        /// The consumer failed to apply a batch (nothing of that batch counts).
        case apply(ApplyError)
    }

    /// What a catch-up did, and the reader to go on with (at `summary.endPosition`, also after a
    /// failure, so that a caller may try again).
    package struct Outcome<ApplyError: Error> {
        package var reader: LogFollower.Steps
        package var summary: CatchUpSummary
        package var failure: Failure<ApplyError>?

        /// The summary, or the failure as the consumer's own error: `apply`'s as it was thrown, the
        /// log's wrapped by `logFailure`.
        package func summary(orThrow logFailure: (LogError) -> ApplyError) throws(ApplyError) -> CatchUpSummary {
            switch failure {
            case .log(let error)?: throw logFailure(error)
            case .apply(let error)?: throw error
            case nil: return summary
            }
        }
    }

    /// A batch read ahead, and turned by the consumer's `prepare` into what it applies.
    package struct PreparedBatch<Prepared: Sendable>: Sendable {
        /// What `prepare` made of the batch's events.
        package var prepared: Prepared
        /// How many events the batch held.
        package var events: Int
        /// The sequence number of its first event (`nil` when it held none).
        package var firstSequence: UInt64?
        /// The reader's position after it.
        package var position: UInt64
    }

    /// ``run(log:reader:archiveDirectory:from:batchSize:readAhead:cursor:logger:progress:isolation:prepare:apply:)``
    /// for a consumer that applies the events as read.
    package static func run<ApplyError: Error>(
        log: WriteAheadLog, reader: LogFollower.Steps?, archiveDirectory: String? = nil, from position: UInt64, batchSize: Int,
        readAhead: BlockingExecutor,
        cursor: RetentionCursor?,
        logger: Logger, progress: (@Sendable (CatchUpProgress) -> Void)?, isolation: isolated (any Actor)? = #isolation,
        apply: (ArraySlice<SequencedEvent>, UInt64, UInt64) async throws(ApplyError) -> Void
    ) async -> Outcome<ApplyError> {
        await run(
            log: log, reader: reader, archiveDirectory: archiveDirectory, from: position, batchSize: batchSize, readAhead: readAhead, cursor: cursor,
            logger: logger, progress: progress, isolation: isolation, prepare: { $0[...] }, apply: apply)
    }

    /// Applies the events of `log` from `position` (read with `reader`, a new one when `nil`) to its
    /// durable end now, in batches of `batchSize`; `apply(prepared, from, to)` must apply what
    /// `prepare` made of a batch and move its position from `from` to `to` (a batch covers every
    /// sequence number in between, damaged ones included). `prepare` runs on the read-ahead
    /// thread, right after the batch is read, while the consumer applies the batch before: work
    /// that needs only the events (reducing them to counts) is done there, and the events are
    /// let go before they wait. `cursor` follows after each batch, at most once a second, and at
    /// the end. A cancelled task stops after the batch under way (the summary's end position says
    /// where).
    package static func run<Prepared: Sendable, ApplyError: Error>(
        log: WriteAheadLog, reader: LogFollower.Steps?, archiveDirectory: String? = nil, from position: UInt64, batchSize: Int,
        readAhead: BlockingExecutor,
        cursor: RetentionCursor?,
        logger: Logger, progress: (@Sendable (CatchUpProgress) -> Void)?, isolation: isolated (any Actor)? = #isolation,
        prepare: @escaping @Sendable ([SequencedEvent]) -> Prepared,
        apply: (Prepared, UInt64, UInt64) async throws(ApplyError) -> Void
    ) async -> Outcome<ApplyError> {
        let started = SystemClock.monotonicNanoseconds()
        let end = await log.durableSequence
        var summary = CatchUpSummary(startPosition: position, endPosition: position)
        var position = position
        var held: LogFollower.Steps? = reader ?? LogFollower.Steps(log: log, from: position, archiveDirectory: archiveDirectory)
        typealias ReadAhead = Task<(LogFollower.Steps, Result<PreparedBatch<Prepared>, LogError>), Never>
        func readNext() -> ReadAhead? {
            guard let taken = held else { return nil }
            held = nil
            return Task {
                await readAhead.run(moving: taken) { (owned: inout LogFollower.Steps) throws(LogError) -> PreparedBatch<Prepared> in
                    let batch = try owned.read(maximumEvents: batchSize, below: end)
                    return PreparedBatch(
                        prepared: prepare(batch.events), events: batch.events.count, firstSequence: batch.events.first?.sequence,
                        position: batch.position)
                }
            }
        }
        func finish(_ failure: Failure<ApplyError>?, pending: ReadAhead?) async -> Outcome<ApplyError> {
            // The reader comes back from a read-ahead under way, so a later call can resume.
            if held == nil, let pending { held = await pending.value.0 }
            if failure != nil {
                // After a failure the reader stands past the batch that failed (and past the one the
                // read-ahead decoded): a later call must read again from the position.
                held?.close()
                held = nil
            }
            await cursor?.commit(to: position, force: true)
            summary.endPosition = position
            summary.seconds = Double(SystemClock.monotonicNanoseconds() - started) / 1e9
            let reader = held ?? LogFollower.Steps(log: log, from: position, archiveDirectory: archiveDirectory)
            return Outcome(reader: reader, summary: summary, failure: failure)
        }
        var pending = position < end ? readNext() : nil
        // A cancelled task (a server shutting down) stops after the batch under way: catching up a
        // backlog of millions of events must not hold SIGTERM for minutes, and the position and
        // cursor are saved below as after any batch.
        while position < end, !Task.isCancelled, let task = pending {
            let (returned, result) = await task.value
            held = returned
            pending = nil
            let batch: PreparedBatch<Prepared>
            do {
                batch = try result.get()
            } catch {
                return await finish(.log(error), pending: nil)
            }
            if batch.position < end, batch.events > 0 { pending = readNext() }
            // Damaged frames up to the end leave nothing to read: move past them rather than loop.
            let next = batch.events == 0 ? end : batch.position
            if batch.events == 0 {
                summary.skippedSequences += end - position
            } else if let first = batch.firstSequence, first > position {
                summary.skippedSequences += first - position
            }
            do {
                try await apply(batch.prepared, position, next)
            } catch {
                return await finish(.apply(error), pending: pending)
            }
            summary.events += batch.events
            summary.transactions += 1
            position = next
            await cursor?.commit(to: position, force: false)
            progress?(
                CatchUpProgress(
                    position: position, end: end, events: summary.events, seconds: Double(SystemClock.monotonicNanoseconds() - started) / 1e9))
        }
        return await finish(nil, pending: pending)
    }
}

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
        // The follower's loop, stopping at the durable end found now; the cursor is kept below,
        // behind what was applied, and forced at the end.
        var loop = LogFollower.Loop(
            log: log, from: position, batchSize: batchSize, mode: .catchUp, cursor: .none, archiveDirectory: archiveDirectory,
            readAhead: readAhead, resuming: reader, prepare: prepare)
        loop.end = end
        func finish(_ failure: Failure<ApplyError>?) async -> Outcome<ApplyError> {
            // The reader comes back from a read-ahead under way, so a later call can resume.
            var held = await loop.release()
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
        // A cancelled task (a server shutting down) stops after the batch under way: catching up a
        // backlog of millions of events must not hold SIGTERM for minutes, and the position and
        // cursor are saved below as after any batch.
        while true {
            let step: LogFollower.Step<Prepared>
            do {
                guard let next = try await loop.next() else { break }
                step = next
            } catch {
                return await finish(.log(error))
            }
            summary.skippedSequences += step.skipped
            do {
                try await apply(step.value, step.from, step.to)
            } catch {
                return await finish(.apply(error))
            }
            summary.events += step.events
            summary.transactions += 1
            position = step.to
            await cursor?.commit(to: position, force: false)
            progress?(
                CatchUpProgress(
                    position: position, end: end, events: summary.events, seconds: Double(SystemClock.monotonicNanoseconds() - started) / 1e9))
        }
        return await finish(nil)
    }
}

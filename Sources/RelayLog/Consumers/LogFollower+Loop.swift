import RelayCore
import RelayIO

extension LogFollower {
    /// A batch the loop read ahead, turned by the consumer's `prepare` into what it handles, and
    /// the positions it covers.
    struct Step<Value: Sendable>: Sendable {
        /// What `prepare` made of the batch's events.
        var value: Value
        /// How many events the batch held.
        var events: Int
        /// The position before the batch.
        var from: UInt64
        /// The position after it (every sequence number in between is covered, damaged ones included).
        var to: UInt64
        /// Sequence numbers passed over without an event (damage, or events no longer kept).
        var skipped: UInt64
    }

    /// The one read loop of the log's consumers, behind both the follower's iterator and
    /// ``LogCatchUp``: it waits for the durable end (``Mode/follow``), reads the next batch ahead on
    /// the read-ahead thread while the consumer handles this one, runs the consumer's `prepare` there
    /// (so that work needing only the events, such as reducing them to counts, is done before they
    /// wait), moves past damage, and keeps the cursor as ``CursorKeeping`` says.
    struct Loop<Value: Sendable>: Sendable {
        /// A batch read: what `prepare` made of it, and the reader's facts about it.
        struct Read: Sendable {
            var value: Value
            var events: Int
            var firstSequence: UInt64?
            var position: UInt64
        }
        typealias ReadAhead = Task<(Steps, Result<Read, LogError>), Never>

        let log: WriteAheadLog
        let batchSize: Int
        let mode: Mode
        let cursor: CursorKeeping
        let archiveDirectory: String?
        let readAhead: BlockingExecutor
        let prepare: @Sendable ([SequencedEvent]) -> Value
        /// The next sequence number the consumer has not been given.
        private(set) var position: UInt64
        /// Where reading stops for now: the durable end last seen (`nil` before the first batch).
        var end: UInt64?
        /// The position the cursor is to be moved to once the consumer asks for the next batch.
        private var handled: UInt64?
        private var steps: Steps?
        private var pending: ReadAhead?

        init(
            log: WriteAheadLog, from position: UInt64, batchSize: Int, mode: Mode, cursor: CursorKeeping, archiveDirectory: String?,
            readAhead: BlockingExecutor, resuming steps: Steps? = nil, prepare: @escaping @Sendable ([SequencedEvent]) -> Value
        ) {
            self.log = log
            self.position = position
            self.batchSize = Swift.max(1, batchSize)
            self.mode = mode
            self.cursor = cursor
            self.archiveDirectory = archiveDirectory
            self.readAhead = readAhead
            self.steps = steps
            self.prepare = prepare
        }

        /// The next batch, or `nil` at the end (``Mode/catchUp``), once the log is closed, or when
        /// the task is cancelled. The reader stays with the loop (``release()``).
        ///
        /// - Throws: ``LogError`` when the log cannot be read; the cursor stays where it was.
        mutating func next() async throws(LogError) -> Step<Value>? {
            if let handled {
                // The consumer asks for more: it is done with everything below `handled`.
                await keepCursor(at: handled)
                self.handled = nil
            }
            var limit: UInt64
            if let end {
                limit = end
            } else {
                limit = await log.durableSequence
                end = limit
            }
            if position >= limit {
                guard mode == .follow, !Task.isCancelled else { return nil }
                limit = await log.waitForDurable(beyond: position)
                guard limit > position else { return nil }
                end = limit
            }
            guard !Task.isCancelled else { return nil }
            let task = pending ?? read(below: limit)
            pending = nil
            let (returned, result) = await task.value
            steps = returned
            let batch = try result.get()
            let next = batch.events == 0 ? limit : batch.position
            if batch.events > 0, next < limit { pending = read(below: limit) }
            let first = batch.firstSequence ?? next
            let skipped = first > position ? first - position : 0
            let step = Step(value: batch.value, events: batch.events, from: position, to: next, skipped: skipped)
            position = next
            handled = next
            return step
        }

        /// Starts reading the next batch below `limit` on the read-ahead thread.
        private mutating func read(below limit: UInt64) -> ReadAhead {
            let taken = steps ?? Steps(log: log, from: position, archiveDirectory: archiveDirectory)
            steps = nil
            let size = batchSize
            return Task { [readAhead, prepare] in
                await readAhead.run(moving: taken) { (owned: inout Steps) throws(LogError) -> Read in
                    let batch = try owned.read(maximumEvents: size, below: limit)
                    // The events are let go here: the consumer gets what `prepare` made of them.
                    return Read(
                        value: prepare(batch.events), events: batch.events.count, firstSequence: batch.events.first?.sequence,
                        position: batch.position)
                }
            }
        }

        /// Moves the consumer's cursor to `position`, as ``CursorKeeping`` says.
        private func keepCursor(at position: UInt64) async {
            switch cursor {
            case .none:
                break
            case .saves(let name):
                // A failed write keeps segments a little longer; the next batch tries again.
                try? await log.commitCursor(name, to: position)
            case .follows(let cursor):
                await cursor.commit(to: position, force: false)
            }
        }

        /// Hands back the reader (back from a read-ahead under way, if any), standing wherever the
        /// last read left it: past ``position`` when a batch was read ahead.
        mutating func release() async -> Steps? {
            if let pending {
                let (returned, _) = await pending.value
                self.pending = nil
                steps?.close()
                steps = returned
            }
            let released = steps
            steps = nil
            return released
        }
    }
}

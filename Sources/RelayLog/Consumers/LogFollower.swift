package import RelayCore
package import RelayIO

/// One read loop for every consumer of an open log: an async sequence of batches that waits for
/// the durable end, reads the next batch ahead on a thread of its own while the consumer handles
/// this one, passes over damage (the log's shared decoder logs each damage once, whoever reads it),
/// and keeps the consumer's cursor: saved, or followed, once the consumer asks for the batch after.
///
/// It generalizes ``LogCatchUp`` (which stops at the durable end it found): a follower in
/// ``Mode/follow`` mode waits for new events and ends only when the log closes or the task is
/// cancelled. Consumers outside RelayLog still build their loops themselves; moving them onto it
/// is part 4 of issue 39 (docs/seams/log.md).
package struct LogFollower: AsyncSequence, Sendable {
    /// A batch of events and the positions it covers: every sequence number from `from` up to
    /// `to`, damaged ones included (a consumer that keeps its own position moves it to `to`).
    package struct Batch: Sendable {
        /// The events read, in sequence order.
        package var events: [SequencedEvent]
        /// The position before the batch.
        package var from: UInt64
        /// The position after it.
        package var to: UInt64
        /// Sequence numbers passed over without an event (damage, or events no longer kept).
        package var skipped: UInt64
    }

    /// Whether the follower ends at the durable end it found first, or waits for more.
    package enum Mode: Sendable, Hashable {
        /// Ends once it reaches the durable end as it was when the first batch was asked for.
        case catchUp
        /// Waits for new events; ends when the log closes or the task is cancelled.
        case follow
    }

    /// What the follower does with the consumer's cursor, once the consumer asks for the batch
    /// after one (so the cursor never passes an event the consumer has not handled).
    package enum CursorKeeping: Sendable {
        /// Nothing: the consumer keeps its position itself.
        case none
        /// Saves cursor `name` (a declared ``LogConsumerDeclaration/cursorFile(_:)`` consumer) with
        /// ``WriteAheadLog/commitCursor(_:to:)`` after each batch.
        case saves(String)
        /// Moves the retention cursor of a consumer that keeps its own position
        /// (``RetentionCursor``, at most once a second).
        case follows(RetentionCursor)
    }

    package typealias Element = Batch
    package typealias Failure = LogError

    let log: WriteAheadLog
    let start: UInt64
    let batchSize: Int
    let mode: Mode
    let cursor: CursorKeeping
    let archiveDirectory: String?
    let readAhead: BlockingExecutor

    /// A follower of `log` from `position`, in batches of at most `batchSize` events, read ahead
    /// on `readAhead`; with `archiveDirectory`, archived segments fill in those the log no longer has.
    package init(
        log: WriteAheadLog, from position: UInt64, batchSize: Int, mode: Mode, cursor: CursorKeeping = .none, archiveDirectory: String? = nil,
        readAhead: BlockingExecutor
    ) {
        self.log = log
        self.start = position
        self.batchSize = Swift.max(1, batchSize)
        self.mode = mode
        self.cursor = cursor
        self.archiveDirectory = archiveDirectory
        self.readAhead = readAhead
    }

    package func makeAsyncIterator() -> Iterator {
        Iterator(follower: self, position: start)
    }

    /// Reads the follower's batches, one at a time.
    package struct Iterator: AsyncIteratorProtocol, Sendable {
        typealias ReadAhead = Task<(LogReader, Result<LogReadBatch, LogError>), Never>

        let follower: LogFollower
        /// The next sequence number the consumer has not been given.
        private(set) var position: UInt64
        /// Where reading stops for now: the durable end last seen (`nil` before the first batch).
        private var end: UInt64?
        /// The position the cursor is to be moved to once the consumer asks for the next batch.
        private var handled: UInt64?
        private var reader: LogReader?
        private var pending: ReadAhead?

        init(follower: LogFollower, position: UInt64) {
            self.follower = follower
            self.position = position
        }

        package mutating func next(isolation actor: isolated (any Actor)?) async throws(LogError) -> Batch? {
            try await next()
        }

        /// The next batch, or `nil` at the end (``Mode/catchUp``), once the log is closed, or when
        /// the task is cancelled.
        ///
        /// - Throws: ``LogError`` when the log cannot be read; the cursor stays where it was.
        package mutating func next() async throws(LogError) -> Batch? {
            if let handled {
                // The consumer asks for more: it is done with everything below `handled`.
                await keepCursor(at: handled)
                self.handled = nil
            }
            let log = follower.log
            var limit: UInt64
            if let end {
                limit = end
            } else {
                limit = await log.durableSequence
                end = limit
            }
            if position >= limit {
                guard follower.mode == .follow, !Task.isCancelled else { return await finish() }
                limit = await log.waitForDurable(beyond: position)
                guard limit > position else { return await finish() }
                end = limit
            }
            guard !Task.isCancelled else { return await finish() }
            let task = pending ?? read(below: limit)
            pending = nil
            let (returned, result) = await task.value
            reader = returned
            let batch = try result.get()
            let next = batch.events.isEmpty ? limit : batch.position
            if !batch.events.isEmpty, next < limit { pending = read(below: limit) }
            let first = batch.events.first?.sequence ?? next
            let skipped = first > position ? first - position : 0
            let answer = Batch(events: batch.events, from: position, to: next, skipped: skipped)
            position = next
            handled = next
            return answer
        }

        /// Starts reading the next batch below `limit` on the read-ahead thread.
        private mutating func read(below limit: UInt64) -> ReadAhead {
            let taken = reader ?? follower.log.reader(from: position, archiveDirectory: follower.archiveDirectory)
            reader = nil
            let size = follower.batchSize
            return Task { [readAhead = follower.readAhead] in
                await readAhead.run(moving: taken) { (owned: inout LogReader) throws(LogError) -> LogReadBatch in
                    try owned.read(maximumEvents: size, below: limit)
                }
            }
        }

        /// Moves the consumer's cursor to `position`, as ``CursorKeeping`` says.
        private func keepCursor(at position: UInt64) async {
            switch follower.cursor {
            case .none:
                break
            case .saves(let name):
                // A failed write keeps segments a little longer; the next batch tries again.
                try? await follower.log.commitCursor(name, to: position)
            case .follows(let cursor):
                await cursor.commit(to: position, force: false)
            }
        }

        /// Ends the sequence: the reader (back from a read-ahead under way, if any) is closed.
        private mutating func finish() async -> Batch? {
            if let pending {
                var (returned, _) = await pending.value
                returned.close()
                self.pending = nil
            }
            reader?.close()
            reader = nil
            return nil
        }
    }
}

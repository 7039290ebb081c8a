package import RelayCore
package import RelayIO

/// One read loop for every consumer of an open log: an async sequence of batches that waits for
/// the durable end, reads the next batch ahead on a thread of its own while the consumer handles
/// this one, passes over damage (the log's shared decoder logs each damage once, whoever reads it),
/// and keeps the consumer's cursor: saved, or followed, once the consumer asks for the batch after.
///
/// It generalizes ``LogCatchUp`` (which stops at the durable end it found): a follower in
/// ``Mode/follow`` mode waits for new events and ends only when the log closes or the task is
/// cancelled. ``LogCatchUp`` runs the same loop (``Loop``); consumers that choose their own limits
/// step through the log with ``Steps`` (docs/seams/follow.md).
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

    /// Reads the follower's batches, one at a time (the log's one read loop, ``Loop``).
    package struct Iterator: AsyncIteratorProtocol, Sendable {
        private var loop: Loop<[SequencedEvent]>

        init(follower: LogFollower, position: UInt64) {
            loop = Loop(
                log: follower.log, from: position, batchSize: follower.batchSize, mode: follower.mode, cursor: follower.cursor,
                archiveDirectory: follower.archiveDirectory, readAhead: follower.readAhead, prepare: { $0 })
        }

        /// The next sequence number the consumer has not been given.
        package var position: UInt64 { loop.position }

        package mutating func next(isolation actor: isolated (any Actor)?) async throws(LogError) -> Batch? {
            try await next()
        }

        /// The next batch, or `nil` at the end (``Mode/catchUp``), once the log is closed, or when
        /// the task is cancelled.
        ///
        /// - Throws: ``LogError`` when the log cannot be read; the cursor stays where it was.
        package mutating func next() async throws(LogError) -> Batch? {
            guard let step = try await loop.next() else {
                // The end: the reader (back from a read-ahead under way, if any) is closed.
                var released = await loop.release()
                released?.close()
                return nil
            }
            return Batch(events: step.value, from: step.from, to: step.to, skipped: step.skipped)
        }
    }
}

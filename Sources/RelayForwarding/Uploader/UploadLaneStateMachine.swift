public import RelayCore
import RelayLog

/// The decisions of an upload lane, without I/O: which events to read, send and retry, when to
/// save the cursor, when to wait and when to stop, for a lane of an ``EventSink``. ``UploadLane`` is the driver: it asks for the
/// next action, does it (reads the log, sends, saves, waits), and reports back what happened.
///
/// It keeps the lane's promises:
/// - the cursor only passes events that are done, in order (``LaneProgress``);
/// - the lane reads at most ``Settings/maximumUnsyncedEvents`` past the point a crash would
///   restart from, which bounds what a crash sends twice;
/// - events of one ordering key (a registration's device token, for Campaign) go out one at a
///   time, in log order; everything else may overtake anything, so an event backing off never
///   holds back the events behind it;
/// - a tracking lane with a pipeline sends fresh hits in batches, one batch at a time, and the
///   hits a batch could not deliver go again one by one, on their own schedules.
public struct UploadLaneStateMachine: Sendable {
    /// What the lane is set up to do.
    public struct Settings: Sendable {
        /// Which events the lane carries (its sink's ``Sink/carries(_:)``); the others are passed over.
        public var carries: @Sendable (Event) -> Bool
        /// The key whose events go one at a time, in log order (its sink's ``EventSink/orderingKey(of:)``).
        public var orderingKey: @Sendable (Event) -> String?
        /// When set, only events whose time is in this range are sent (a replay by time).
        public var times: Range<Int64>?
        /// Events sent one by one at the same time, at most.
        public var concurrency: Int
        /// Events read past the restart point, at most (the duplicate bound).
        public var maximumUnsyncedEvents: Int
        /// Hits per pipeline batch; `nil` when the lane sends every event on its own.
        public var batchSize: Int?
        /// Whether the lane keeps a durable cursor (the normal uploader) or not (a replay).
        public var savesCursor: Bool
        /// The lane stops once every event below this is done; `nil`: it follows the log.
        public var end: UInt64?
        /// How often the cursor is saved while sends are under way.
        public var commitInterval: Duration

        /// Settings for a lane of the Campaign host of `kind` (registrations in device token order).
        public init(
            kind: UploadLane.Kind, times: Range<Int64>? = nil, concurrency: Int, maximumUnsyncedEvents: Int, batchSize: Int?,
            savesCursor: Bool, end: UInt64?, commitInterval: Duration = .milliseconds(200)
        ) {
            self.init(
                carries: { kind.carries($0) }, orderingKey: UploadLane.Kind.deviceTokenOrder, times: times, concurrency: concurrency,
                maximumUnsyncedEvents: maximumUnsyncedEvents, batchSize: batchSize, savesCursor: savesCursor, end: end, commitInterval: commitInterval
            )
        }

        /// Settings; the cursor is saved at least every `commitInterval` while sends are under way.
        /// Events of one `orderingKey` go one at a time, in log order (none by default).
        public init(
            carries: @escaping @Sendable (Event) -> Bool, orderingKey: @escaping @Sendable (Event) -> String? = { _ in nil },
            times: Range<Int64>? = nil, concurrency: Int, maximumUnsyncedEvents: Int,
            batchSize: Int?, savesCursor: Bool, end: UInt64?, commitInterval: Duration = .milliseconds(200)
        ) {
            self.carries = carries
            self.orderingKey = orderingKey
            self.times = times
            self.concurrency = max(1, concurrency)
            self.maximumUnsyncedEvents = max(1, maximumUnsyncedEvents)
            self.batchSize = batchSize.map { max(1, $0) }
            self.savesCursor = savesCursor
            self.end = end
            self.commitInterval = commitInterval
        }
    }

    /// What the driver does next.
    public enum Action: Sendable {
        /// Read the log from sequence `from`, up to a limit the driver knows (the end, the durable
        /// sequence), and report with ``read(_:limit:)`` or ``readFailed(now:)``.
        case read(from: UInt64)
        /// Send one event until it is done or abandoned, and report with ``completed(_:)``.
        case send(SequencedEvent)
        /// Send fresh tracking hits through the pipeline, and report with ``completed(_:)``.
        case sendBatch([SequencedEvent])
        /// Save the cursor at this position, and report with ``cursorSaved(_:now:)`` (or nothing on failure).
        case saveCursor(UInt64)
        /// Wait for a send under way to finish.
        case awaitCompletion
        /// Wait until the log holds events at or past this sequence, and report with
        /// ``eventsArrived()`` or ``logClosed()``.
        case awaitEvents(beyond: UInt64)
        /// Nothing can be done before this instant (a failed read is retried then); report with ``resumed()``.
        case sleep(until: ContinuousClock.Instant)
        /// The lane is done: save the cursor one last time if ``cursorToSave`` says so, and return.
        case finish
    }

    /// How a send ended.
    public enum Completion: Sendable {
        /// The event is done (delivered, skipped or dead-lettered).
        case done(UInt64)
        /// The send was abandoned (the lane is stopping); the event is not done.
        case abandoned(UInt64)
        /// A pipeline batch: the events done, those to send again one by one, and whether the
        /// rest was abandoned (the lane is stopping).
        case batch(done: [UInt64], retry: [SequencedEvent], abandoned: Bool)
    }

    /// The settings.
    public let settings: Settings
    /// Which events are done, and how far the cursor may go.
    public private(set) var progress: LaneProgress
    /// Events passed over (another kind, or outside the time range).
    public private(set) var passedOver = 0

    private var buffer: [SequencedEvent] = []
    private var bufferIndex = 0
    /// The events of this lane read and not known done, in log order, with their times (from
    /// `owedStart` on): the first is the oldest event the host is still owed. At most
    /// ``Settings/maximumUnsyncedEvents`` long, as the lane reads no further ahead.
    private var owed: [(sequence: UInt64, nanoseconds: Int64)] = []
    private var owedStart = 0
    /// Fresh hits waiting to fill a pipeline batch.
    private var ready: [SequencedEvent] = []
    /// Events to send again one by one (hits a batch did not deliver).
    private var retries: [SequencedEvent] = []
    /// Queued registrations whose token is free again: started before anything else.
    private var startable: [(SequencedEvent, token: String)] = []
    private var batchInFlight = false
    private var singles = 0
    /// Tokens with a registration in flight, and the registrations waiting behind it.
    private var waitingByToken: [String: [SequencedEvent]] = [:]
    private var tokenOfSequence: [UInt64: String] = [:]
    private var stopping = false
    private var exhausted = false
    private var closed = false
    private var lastSave: ContinuousClock.Instant?
    private var readRetryAt: ContinuousClock.Instant?
    // Per round (a round ends when the lane waits): whether reading has nothing more to give now,
    // and whether saving was tried, so a failing read or save is not tried in a tight loop.
    private var readBlocked = false
    private var saveTried = false

    /// A lane that starts at sequence `start`.
    public init(settings: Settings, start: UInt64) {
        self.settings = settings
        self.progress = LaneProgress(start: start)
    }

    /// Sends under way: single events, plus one for a pipeline batch.
    public var inFlight: Int { singles + (batchInFlight ? 1 : 0) }

    /// The time of the oldest event read and not done yet (the event at the lane's position), or
    /// `nil` when none is: what `relay_upload_oldest_unsent_seconds` reports the age of.
    ///
    /// Every event below the position is done and the event at it is not, so the first owed event
    /// at or past the position is that event; those before it are dropped here.
    public mutating func oldestOwedTime() -> EventTime? {
        while owedStart < owed.count, owed[owedStart].sequence < progress.contiguous { owedStart += 1 }
        if owedStart > 1024, owedStart * 2 > owed.count {
            owed.removeFirst(owedStart)
            owedStart = 0
        }
        return owedStart < owed.count ? EventTime(nanosecondsSinceEpoch: owed[owedStart].nanoseconds) : nil
    }

    /// Where the final save should put the cursor, if anywhere.
    public var cursorToSave: UInt64? {
        settings.savesCursor && progress.contiguous > progress.durableCursor ? progress.contiguous : nil
    }

    // MARK: Decisions

    /// The next thing to do.
    public mutating func nextAction(now: ContinuousClock.Instant) -> Action {
        var idleRounds = 0
        while true {
            if !startable.isEmpty {
                let (event, token) = startable.removeFirst()
                return start(event, token: token)
            }
            if let action = fill(now: now) { return action }
            if settings.batchSize != nil, !ready.isEmpty, !batchInFlight, !stopping {
                return takeBatch()
            }
            while !stopping, singles < settings.concurrency, !retries.isEmpty {
                if let action = launch(retries.removeFirst()) { return action }
            }
            if settings.savesCursor, !saveTried, progress.contiguous > progress.durableCursor {
                let nearBound = progress.unsynced(saves: true) >= UInt64(settings.maximumUnsyncedEvents / 2)
                let due = lastSave.map { now - $0 > settings.commitInterval } ?? true
                if inFlight == 0 || nearBound || due {
                    saveTried = true
                    return .saveCursor(progress.contiguous)
                }
            }
            guard inFlight == 0 else { return .awaitCompletion }
            if stopping || exhausted || closed { return .finish }
            if let end = settings.end, progress.contiguous >= end { return .finish }
            if let retryAt = readRetryAt, retryAt > now { return .sleep(until: retryAt) }
            if settings.savesCursor, bufferIndex == buffer.count { return .awaitEvents(beyond: progress.next) }
            // Nothing under way, yet events may be readable: a new round at once; twice without
            // progress (a save that keeps failing under the duplicate bound), a short pause.
            idleRounds += 1
            if idleRounds > 1 { return .sleep(until: now + .milliseconds(100)) }
            beginRound()
        }
    }

    /// Reads, and starts sends while there is room and the duplicate bound allows it.
    private mutating func fill(now: ContinuousClock.Instant) -> Action? {
        while !stopping, !exhausted, !readBlocked, progress.unsynced(saves: settings.savesCursor) < UInt64(settings.maximumUnsyncedEvents) {
            if let batchSize = settings.batchSize {
                guard !batchInFlight, retries.count < batchSize else { return nil }
            } else {
                guard singles < settings.concurrency else { return nil }
            }
            if bufferIndex == buffer.count {
                // After a failed read, the next try waits its second even when sends end sooner.
                if let retryAt = readRetryAt, retryAt > now { return nil }
                return .read(from: progress.next)
            }
            let event = buffer[bufferIndex]
            bufferIndex += 1
            progress.skip(to: event.sequence)
            progress.next = event.sequence + 1
            guard carries(event.event) else {
                passedOver += 1
                progress.markDone(event.sequence)
                continue
            }
            owed.append((event.sequence, event.event.time.nanosecondsSinceEpoch))
            if let batchSize = settings.batchSize {
                ready.append(event)
                if ready.count >= batchSize { return takeBatch() }
                continue
            }
            if let action = launch(event) { return action }
        }
        return nil
    }

    private func carries(_ event: Event) -> Bool {
        settings.carries(event) && (settings.times?.contains(event.time.nanosecondsSinceEpoch) ?? true)
    }

    private mutating func takeBatch() -> Action {
        let batch = ready
        ready = []
        batchInFlight = true
        return .sendBatch(batch)
    }

    /// Starts `event`, unless an event of its ordering key (a registration of its token) is in
    /// flight: then it waits its turn.
    private mutating func launch(_ event: SequencedEvent) -> Action? {
        guard let token = settings.orderingKey(event.event) else { return start(event, token: nil) }
        guard waitingByToken[token] == nil else {
            waitingByToken[token, default: []].append(event)
            return nil
        }
        waitingByToken[token] = []
        return start(event, token: token)
    }

    private mutating func start(_ event: SequencedEvent, token: String?) -> Action {
        if let token { tokenOfSequence[event.sequence] = token }
        singles += 1
        return .send(event)
    }

    private mutating func beginRound() {
        readBlocked = false
        saveTried = false
    }

    // MARK: Reports

    /// A read from ``progress``'s `next` returned `events`, all below `limit` (`UInt64.max`: no
    /// limit, a replay to the end of the log).
    public mutating func read(_ events: [SequencedEvent], limit: UInt64) {
        readRetryAt = nil
        buffer = events
        bufferIndex = 0
        guard events.isEmpty else { return }
        readBlocked = true
        if limit == .max {
            exhausted = true  // a replay without an end reached the end of the log
        } else {
            // Durable, yet not readable: lost to damage. Do not wait for it forever.
            progress.skip(to: limit)
        }
    }

    /// Reading failed: it is tried again in a second.
    public mutating func readFailed(now: ContinuousClock.Instant) {
        readBlocked = true
        readRetryAt = now + .seconds(1)
    }

    /// The cursor is saved at `position`.
    ///
    /// A save that worked lets the next one through in the same round: a lane that passes over the
    /// last events it reads (the marketing lane after a run of hits) must save past them before
    /// it waits for more, and a save earlier in the round used to keep it from doing so, leaving the
    /// cursor (and the backlog the lane reports) at its last full read until new events came. Only
    /// a failed save waits for the next round, so a failing save is not tried in a tight loop.
    public mutating func cursorSaved(_ position: UInt64, now: ContinuousClock.Instant) {
        progress.durableCursor = max(progress.durableCursor, position)
        lastSave = now
        saveTried = false
    }

    /// A send ended.
    public mutating func completed(_ completion: Completion) {
        switch completion {
        case .done(let sequence):
            singles -= 1
            progress.markDone(sequence)
            if let token = tokenOfSequence.removeValue(forKey: sequence) {
                if let next = waitingByToken[token]?.first {
                    waitingByToken[token]?.removeFirst()
                    startable.append((next, token))
                } else {
                    waitingByToken[token] = nil
                }
            }
        case .abandoned(let sequence):
            singles -= 1
            tokenOfSequence[sequence] = nil
            stopping = true
        case .batch(let done, let retry, let abandoned):
            batchInFlight = false
            for sequence in done { progress.markDone(sequence) }
            retries += retry
            if abandoned { stopping = true }
        }
        beginRound()
    }

    /// The log holds new events.
    public mutating func eventsArrived() { beginRound() }

    /// The wait of ``Action/sleep(until:)`` is over.
    public mutating func resumed() { beginRound() }

    /// The log closed (or the wait was cancelled) while the lane waited for events: it finishes.
    public mutating func logClosed() { closed = true }

    /// The lane is to stop: sends under way finish or are abandoned, nothing new starts.
    public mutating func stop() { stopping = true }
}

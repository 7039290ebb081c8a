public import CampaignProtocol
public import Logging
import RelayCore
public import RelayIO
public import RelayLog

/// Forwards one kind of event (tracking hits, or registrations) from the log to its Campaign host.
///
/// Events are read in log order and sent with bounded concurrency; each one is done when the host
/// accepted it (200), rejected it permanently (it goes to the dead-letter store), or it was skipped.
/// Retryable failures are retried with full-jitter backoff behind a circuit breaker, honouring
/// `Retry-After`. The lane's durable cursor only ever passes events that are done, and the lane
/// never sends beyond ``UploadConfiguration/maximumUnsyncedEvents`` past it — so a crash re-sends at
/// most that many events.
public actor UploadLane: BlockingActor, BreakerGate {
    /// Which events a lane carries.
    public enum Kind: String, Sendable, Hashable {
        /// Tracking hits, to the tracking host.
        case tracking
        /// Registrations, to the marketing host.
        case marketing

        func carries(_ event: Event) -> Bool {
            switch (self, event) {
            case (.tracking, .tracking), (.marketing, .registration): true
            default: false
            }
        }

        /// The log cursor of the normal uploader for this lane.
        public var cursorName: String { "upload-\(rawValue)" }

        /// The normal uploader's lane as a consumer of the log: its cursor is its position.
        public var consumer: LogConsumerDeclaration { .cursorFile(cursorName) }
    }

    /// Where a lane reads and how it remembers its place.
    public enum Source: Sendable {
        /// The normal uploader: from its durable cursor in the open log, following new events. The
        /// log was opened with the lane's ``Kind/consumer``.
        case cursor(WriteAheadLog)
        /// A replay: the events of `sequences` (and, when given, with event times in `times`) of the
        /// log in `walDirectory`, with the segments of `archiveDirectory` filling in those it no
        /// longer has, independent of any cursor.
        case range(walDirectory: String, archiveDirectory: String?, sequences: Range<UInt64>, times: Range<Int64>?)
    }

    /// Which events the lane carries.
    public nonisolated let kind: Kind
    /// The lane's thread: it reads and decodes the log (blocking `pread`s and inflating), at
    /// ``UploadConfiguration/threadPriority``.
    public nonisolated let executor: BlockingExecutor
    let host: CampaignHost
    let transport: any CampaignTransport
    let store: ForwardingStore
    let source: Source
    let configuration: UploadConfiguration
    let logger: Logger
    let deduplicates: Bool
    /// Sends healthy-host batches of tracking hits in one event-loop hop each (tracking lanes).
    let pipeline: TrackingHitPipeline?
    /// What the lane records as it happens (deliveries, retries, its backlog and oldest owed event).
    let metrics: LaneMetrics
    var breaker: CircuitBreakerStateMachine
    private var random = SystemRandomNumberGenerator()
    private var statistics = LaneStatistics()
    private var nextPermitted: ContinuousClock.Instant = .now

    /// A lane for `kind` events to `host`. Registrations equal to the last one delivered for their
    /// token are skipped when `deduplicates` (the normal uploader; replays resend everything). The
    /// lane records its deliveries, retries and gauges through `metrics` as they happen.
    public init(
        kind: Kind, host: CampaignHost, transport: any CampaignTransport, store: ForwardingStore, source: Source,
        configuration: UploadConfiguration, deduplicates: Bool, logger: Logger, pipeline: TrackingHitPipeline? = nil,
        metrics: LaneMetrics = .none
    ) {
        self.pipeline = kind == .tracking ? pipeline : nil
        self.metrics = metrics
        self.kind = kind
        self.executor = BlockingExecutor(name: "lane-\(kind.rawValue)", priority: configuration.threadPriority)
        self.host = host
        self.transport = transport
        self.store = store
        self.source = source
        self.configuration = configuration
        self.deduplicates = deduplicates
        self.logger = logger
        self.breaker = CircuitBreakerStateMachine(threshold: configuration.breakerThreshold, backoff: configuration.backoff)
    }

    /// What the lane has done so far.
    public var stats: LaneStatistics {
        var current = statistics
        current.breaker =
            switch breaker.state {
            case .closed: "closed"
            case .open: "open"
            case .halfOpen: "half-open"
            }
        return current
    }

    /// Hits delivered through the pipeline (the rest went one request at a time).
    public private(set) var pipelinedDeliveries = 0

    /// Hits per pipeline batch (well under the duplicate bound, so batches never stall the window).
    private var batchSize: Int { max(1, min(512, configuration.maximumUnsyncedEvents / 4)) }

    /// Works until every event below `target` is done (`nil`: follow the log until the task is
    /// cancelled or the log closes). Returns early, with its cursor saved, when cancelled.
    ///
    /// - Throws: ``LogError/undeclaredConsumer(_:declared:)`` when the log of a ``Source/cursor(_:)``
    ///   was opened without the lane's ``Kind/consumer``; ``LogError`` when the cursor cannot be saved at the end.
    ///
    /// The decisions are ``UploadLaneStateMachine``'s; this is its driver: it reads the log on the
    /// lane's thread, sends, saves the cursor and waits, and tells the state machine what happened.
    public func run(until target: UInt64?) async throws(LogError) {
        let start: UInt64
        let end: UInt64?
        var times: Range<Int64>?
        var reader: LogReader
        let log: WriteAheadLog?
        switch source {
        case .cursor(let wal):
            log = wal
            start = try await wal.startPosition(of: kind.cursorName)
            end = target
            reader = wal.reader(from: start)
        case .range(let directory, let archive, let sequences, let range):
            log = nil
            start = sequences.lowerBound
            end = sequences.upperBound
            times = range
            reader = LogReader(walDirectory: directory, archiveDirectory: archive, from: start, damageLogger: logger)
        }
        statistics.position = start
        recordGauges()
        defer { reader.close() }
        var machine = UploadLaneStateMachine(
            settings: .init(
                kind: kind, times: times, concurrency: configuration.concurrency, maximumUnsyncedEvents: configuration.maximumUnsyncedEvents,
                batchSize: pipeline == nil ? nil : batchSize, savesCursor: log != nil, end: end
            ),
            start: start
        )

        await withTaskGroup(of: UploadLaneStateMachine.Completion.self) { group in
            while true {
                if Task.isCancelled { machine.stop() }
                let action = machine.nextAction(now: .now)
                switch action {
                case .read:
                    var limit = end ?? UInt64.max
                    if let log { limit = min(limit, await log.durableSequence) }
                    if limit != .max { statistics.end = max(statistics.end, limit) }
                    guard machine.progress.next < limit else {
                        machine.read([], limit: limit)
                        continue
                    }
                    do {
                        let batch = try reader.read(maximumEvents: 4096, below: limit)
                        machine.read(batch.events, limit: limit)
                    } catch {
                        logger.error("reading the log failed; retrying in a second", metadata: ["error": "\(error)"])
                        machine.readFailed(now: .now)
                    }
                case .send(let event, let paced):
                    if paced { await pace() }
                    group.addTask { await self.deliver(event) }
                case .sendBatch(let events):
                    for _ in events { await pace() }
                    if let pipeline { group.addTask { await self.deliverBatch(events, via: pipeline) } }
                case .saveCursor(let position):
                    guard let log else { continue }
                    do {
                        try await log.commitCursor(kind.cursorName, to: position)
                        machine.cursorSaved(position, now: .now)
                    } catch {
                        logger.error("could not save the upload cursor", metadata: ["error": "\(error)"])
                    }
                case .awaitCompletion:
                    if let completion = await group.next() { machine.completed(completion) }
                case .awaitEvents(let next):
                    guard let log else {
                        machine.logClosed()
                        continue
                    }
                    var durable = await log.durableSequence
                    if durable <= next { durable = await log.waitForDurable(beyond: next) }
                    if durable > next {
                        machine.eventsArrived()
                    } else {
                        machine.logClosed()  // the log closed or the task was cancelled
                    }
                case .sleep(let instant):
                    try? await Task.sleep(until: instant, clock: .continuous)
                    machine.resumed()
                case .finish:
                    break
                }
                statistics.position = machine.progress.contiguous
                statistics.passedOver = machine.passedOver
                statistics.oldestUnsentEvent = machine.oldestOwedTime()
                recordGauges()
                if case .finish = action { break }
            }
        }
        statistics.position = machine.progress.contiguous
        recordGauges()
        if let log, let position = machine.cursorToSave {
            try await log.commitCursor(kind.cursorName, to: position)
        }
    }

    /// Records the gauges that follow the lane's statistics: its backlog (position, end) and its
    /// oldest owed event. Called wherever those may have moved.
    private func recordGauges() {
        metrics.backlog.record(statistics.backlog)
        metrics.record(oldestUnsent: statistics.oldestUnsentEvent)
    }

    /// Waits as `--max-rate` asks.
    private func pace() async {
        guard let rate = configuration.maximumRate, rate > 0 else { return }
        let now = ContinuousClock.now
        let interval = Duration.nanoseconds(Int64(1e9 / rate))
        if nextPermitted > now { try? await Task.sleep(until: nextPermitted, clock: .continuous) }
        nextPermitted = max(nextPermitted, now) + interval
    }

    /// Sends a batch of tracking hits through the pipeline while the host is healthy. Hits that
    /// fail, that were redirected, or every hit while the breaker is not closed come back to be
    /// sent one by one (``deliver(_:)``), with their own backoff, attempts and redirections.
    private func deliverBatch(_ events: [SequencedEvent], via pipeline: TrackingHitPipeline) async -> UploadLaneStateMachine.Completion {
        guard case .closed = breaker.state else { return .batch(done: [], retry: events, abandoned: Task.isCancelled) }
        var done: [UInt64] = []
        var retry: [SequencedEvent] = []
        let requests = events.map(request(for:))
        let outcomes = await pipeline.send(requests)
        var answered = false
        var firstFailure: (reason: String, retryAfter: Duration?)?
        for (index, (event, outcome)) in zip(events, outcomes).enumerated() {
            switch outcome {
            case .delivered:
                answered = true
                statistics.delivered += 1
                metrics.delivered.increment()
                pipelinedDeliveries += 1
                done.append(event.sequence)
            case .rejected(let status, let body):
                answered = true
                if await giveUp(event, url: requests[index].url, status: status, body: body, reason: "rejected by the host (HTTP \(status))") {
                    done.append(event.sequence)
                } else {
                    retry.append(event)
                }
            case .redirected:
                answered = true
                retry.append(event)
            case .retryable(let reason, let retryAfter, _, _):
                statistics.retries += 1
                metrics.retries.increment()
                if firstFailure == nil { firstFailure = (reason, retryAfter) }
                retry.append(event)
            case .notSent:
                retry.append(event)
            }
        }
        if answered { hostAnswered() }
        if let failure = firstFailure, !answered || failure.retryAfter != nil {
            let now = ContinuousClock.now
            if let until = breaker.recordFailure(now: now, retryAfter: failure.retryAfter, using: &random) {
                logger.warning(
                    "\(kind.rawValue) host is failing; pausing sends to it",
                    metadata: ["host": "\(host)", "reason": "\(failure.reason)", "next-try-in": "\(until - now)", "backlog": "\(statistics.backlog)"]
                )
            }
            statistics.failed(failure.reason)
        }
        return .batch(done: done, retry: retry, abandoned: false)
    }

    /// The Campaign request that carries `event`.
    private func request(for event: SequencedEvent) -> CampaignRequest {
        switch event.event {
        case .tracking(let hit): .tracking(hit, host: host)
        case .registration(let registration): .registration(registration, host: host)
        }
    }

    /// Sends one event until it is done, or the task is cancelled.
    ///
    /// Done means delivered, skipped as unchanged (registrations from JSON or files only), or in
    /// the dead-letter store: rejected, or given up after ``UploadConfiguration/maximumAttempts``
    /// failures while the host answered others, or older than
    /// ``UploadConfiguration/maximumEventAge`` at a failure.
    private func deliver(_ event: SequencedEvent) async -> UploadLaneStateMachine.Completion {
        if deduplicates, case .registration(let registration) = event.event, registration.sdkForm == nil,
            (try? await store.isUnchanged(registration, within: configuration.registrationDeduplicationWindow)) == true
        {
            statistics.skippedDuplicates += 1
            return .done(event.sequence)
        }
        let request = request(for: event)
        var retry = EventRetryStateMachine(configuration: configuration)
        while !Task.isCancelled {
            guard await waitForPermission() else { break }
            let outcome = await transport.send(request, timeout: configuration.requestTimeout)
            var breakerOpened = false
            var firstFailure = false
            switch outcome {
            case .delivered, .rejected, .redirected:
                hostAnswered()
            case .notSent:
                break
            case .retryable(let reason, let retryAfter, _, _):
                // Stopping (Ctrl-C, SIGTERM) cancels requests under way: not a failure of the host.
                if Task.isCancelled { return .abandoned(event.sequence) }
                (breakerOpened, firstFailure) = hostFailed(reason: reason, retryAfter: retryAfter)
            }
            let age = EventTime.now().nanosecondsSinceEpoch &- event.event.time.nanosecondsSinceEpoch
            switch retry.answer(outcome, breakerOpened: breakerOpened, age: age, using: &random) {
            case .delivered:
                statistics.delivered += 1
                metrics.delivered.increment()
                if deduplicates, case .registration(let registration) = event.event, registration.sdkForm == nil {
                    do { try await store.recordDelivered(registration) } catch {
                        logger.warning("could not remember a delivered registration; it may be sent again", metadata: ["error": "\(error)"])
                    }
                }
                return .done(event.sequence)
            case .giveUp(let status, let body, let reason, let retryAfterStoreFailure):
                if await giveUp(event, url: request.url, status: status, body: body, reason: reason) { return .done(event.sequence) }
                do { try await Task.sleep(for: retryAfterStoreFailure) } catch { break }
            case .retry(let delay):
                if firstFailure, case .retryable(let reason, _, _, _) = outcome {
                    logger.warning(
                        "\(kind.rawValue) host failed: \(reason); retrying in \(delay.nanoseconds / 1_000_000) ms",
                        metadata: ["host": "\(host)", "backlog": "\(statistics.backlog)"]
                    )
                }
                if delay > .zero {
                    do { try await Task.sleep(for: delay) } catch { break }
                }
            }
        }
        return .abandoned(event.sequence)
    }

    /// Records a retryable failure in the circuit breaker. Returns whether the breaker is open
    /// after it (the host's failure, which does not count against the event), and whether it is
    /// the first failure since the host last answered.
    private func hostFailed(reason: String, retryAfter: Duration?) -> (breakerOpened: Bool, firstFailure: Bool) {
        statistics.retries += 1
        metrics.retries.increment()
        let now = ContinuousClock.now
        let wasUp = breaker.failingSince == nil
        let firstFailure = statistics.lastFailure == nil
        let openedUntil = breaker.recordFailure(now: now, retryAfter: retryAfter, using: &random)
        if !firstFailure, let openedUntil, wasUp || statistics.lastFailure != reason {
            logger.warning(
                "\(kind.rawValue) host is failing; pausing sends to it",
                metadata: [
                    "host": "\(host)", "reason": "\(reason)", "down-since": "\(downSince())",
                    "next-try-in": "\(openedUntil - now)", "backlog": "\(statistics.backlog)",
                ]
            )
        }
        statistics.failed(reason)
        return (openedUntil != nil, firstFailure)
    }

    /// Puts `event` in the dead-letter store with the host's last answer; `false` (logged) when
    /// the store failed, and the caller tries again later.
    private func giveUp(_ event: SequencedEvent, url: String, status: Int, body: String, reason: String) async -> Bool {
        if case .range = source {
            // A replay re-sends what the uploader already handled: one dead letter per event is
            // the uploader's; a replay's rejections are reported, never stored a second time.
            statistics.rejected += 1
            logger.warning(
                "replay: gave up on an event; reported, not stored",
                metadata: ["sequence": "\(event.sequence)", "reason": "\(reason)", "url": "\(url)"]
            )
            return true
        }
        do {
            try await store.deadLetter(sequence: event.sequence, event: event.event, url: url, status: status, body: body, reason: reason)
        } catch {
            logger.error("could not store a dead letter; will try again", metadata: ["error": "\(error)", "sequence": "\(event.sequence)"])
            return false
        }
        statistics.deadLettered += 1
        logger.warning(
            "gave up on an event; it is in the dead-letter store",
            metadata: ["sequence": "\(event.sequence)", "reason": "\(reason)", "url": "\(url)"]
        )
        return true
    }

    private func hostAnswered() {
        if let since = breaker.failingSince {
            logger.notice("\(kind.rawValue) host answers again", metadata: ["host": "\(host)", "was-down-for": "\(ContinuousClock.now - since)"])
        }
        breaker.recordAnswer()
        statistics.lastFailure = nil
    }

    private func downSince() -> String {
        guard let since = breaker.failingSince else { return "now" }
        return "\(ContinuousClock.now - since) ago"
    }
}

public import CampaignProtocol
public import Logging
import RelayCore
public import RelayIO
public import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// Forwards one kind of event (tracking hits, or registrations) from the log to its Campaign host.
///
/// Events are read in log order and sent with bounded concurrency; each one is done when the host
/// accepted it (200), rejected it permanently (it goes to the dead-letter store), or it was skipped.
/// Retryable failures are retried with full-jitter backoff behind a circuit breaker, honouring
/// `Retry-After`. The lane's durable cursor only ever passes events that are done, and the lane
/// never sends beyond ``UploadConfiguration/maximumUnsyncedEvents`` past it — so a crash re-sends at
/// most that many events.
public actor UploadLane: BlockingActor {
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
    }

    /// Where a lane reads and how it remembers its place.
    public enum Source: Sendable {
        /// The normal uploader: from its durable cursor in the open log, following new events.
        case cursor(WriteAheadLog)
        /// A replay: the events of `sequences` (and, when given, with event times in `times`) of the
        /// log in `walDirectory`, independent of any cursor.
        case range(walDirectory: String, sequences: Range<UInt64>, times: Range<Int64>?)
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
    private var breaker: CircuitBreakerStateMachine
    private var random = SystemRandomNumberGenerator()
    private var statistics = LaneStatistics()
    private var nextPermitted: ContinuousClock.Instant = .now
    private var progress = LaneProgress(start: 1)

    /// A lane for `kind` events to `host`. Registrations equal to the last one delivered for their
    /// token are skipped when `deduplicates` (the normal uploader; replays resend everything).
    public init(
        kind: Kind, host: CampaignHost, transport: any CampaignTransport, store: ForwardingStore, source: Source,
        configuration: UploadConfiguration, deduplicates: Bool, logger: Logger, pipeline: TrackingHitPipeline? = nil
    ) {
        self.pipeline = kind == .tracking ? pipeline : nil
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
    public var stats: LaneStatistics { statistics }

    private enum Completion: Sendable {
        case done(UInt64)
        case abandoned(UInt64)
        /// A pipeline batch: the events done, those to send again one by one, and whether the
        /// rest was abandoned (cancellation).
        case batch(done: [UInt64], retry: [SequencedEvent], abandoned: Bool)
    }

    /// Hits per pipeline batch (well under the duplicate bound, so batches never stall the window).
    private var batchSize: Int { max(1, min(512, configuration.maximumUnsyncedEvents / 4)) }

    /// Registrations of one device token go out in log order (a token refresh or an opt-out must
    /// not overtake the registration before it); everything else may overtake anything.
    private static func orderingKey(_ event: Event) -> String? {
        guard case .registration(let registration) = event else { return nil }
        return "\(registration.platform.rawValue)\u{1F}\(registration.integrationKey)\u{1F}\(registration.registrationToken)"
    }

    /// Works until every event below `target` is done (`nil`: follow the log until the task is
    /// cancelled or the log closes). Returns early, with its cursor saved, when cancelled.
    ///
    /// Each event is retried on its own schedule: an event backing off never holds back the events
    /// behind it, except later registrations of the same device token, and the duplicate bound
    /// (the lane reads at most ``UploadConfiguration/maximumUnsyncedEvents`` past its cursor).
    public func run(until target: UInt64?) async throws(LogError) {
        var start: UInt64
        let end: UInt64?
        var timeFilter: Range<Int64>?
        let walDirectory: String
        let log: WriteAheadLog?
        switch source {
        case .cursor(let wal):
            log = wal
            walDirectory = wal.walDirectory
            start = try await wal.registerCursor(kind.cursorName, initialPosition: await wal.oldestSequence)
            start = max(start, await wal.oldestSequence)
            end = target
        case .range(let directory, let sequences, let times):
            log = nil
            walDirectory = directory
            start = sequences.lowerBound
            end = sequences.upperBound
            timeFilter = times
        }
        statistics.position = start
        var reader = LogReader(walDirectory: walDirectory, fileSystem: log?.fileSystem ?? PosixFileSystem(), from: start)
        defer { reader.close() }
        var buffer: [SequencedEvent] = []
        var bufferIndex = 0
        progress = LaneProgress(start: start)
        var lastCommit = ContinuousClock.now
        var stopping = false
        var exhausted = false
        let saves = log != nil

        await withTaskGroup(of: Completion.self) { group in
            // A pipeline lane has at most one batch in flight (served over `concurrency`
            // connections); single deliveries (every event of other lanes, retried hits of a
            // pipeline lane) are at most `concurrency` at once.
            var batchInFlight = false
            var singles = 0
            var ready: [SequencedEvent] = []
            var retries: [SequencedEvent] = []
            // Tokens with a registration in flight, and the registrations waiting behind it.
            var waitingByToken: [String: [SequencedEvent]] = [:]
            var tokenOfSequence: [UInt64: String] = [:]

            func start(_ event: SequencedEvent, token: String?, in group: inout TaskGroup<Completion>) {
                if let token { tokenOfSequence[event.sequence] = token }
                singles += 1
                group.addTask { await self.deliver(event) }
            }

            func launch(_ event: SequencedEvent, in group: inout TaskGroup<Completion>) {
                let token = Self.orderingKey(event.event)
                if let token {
                    guard waitingByToken[token] == nil else {
                        waitingByToken[token, default: []].append(event)
                        return
                    }
                    waitingByToken[token] = []
                }
                start(event, token: token, in: &group)
            }

            func finished(_ sequence: UInt64, in group: inout TaskGroup<Completion>) {
                progress.markDone(sequence)
                guard let token = tokenOfSequence.removeValue(forKey: sequence) else { return }
                guard let next = waitingByToken[token]?.first else {
                    waitingByToken[token] = nil
                    return
                }
                waitingByToken[token]?.removeFirst()
                start(next, token: token, in: &group)
            }

            while true {
                // Read and start sends while there is room and the duplicate bound allows it.
                fill: while !stopping, !exhausted, progress.unsynced(saves: saves) < UInt64(configuration.maximumUnsyncedEvents) {
                    if pipeline != nil {
                        guard !batchInFlight, retries.count < batchSize else { break fill }
                    } else {
                        guard singles < configuration.concurrency else { break fill }
                    }
                    if bufferIndex == buffer.count {
                        var limit = end ?? UInt64.max
                        if let log { limit = min(limit, await log.durableSequence) }
                        if limit != .max { statistics.end = max(statistics.end, limit) }
                        guard progress.next < limit else { break fill }
                        let batch: LogReadBatch
                        do {
                            batch = try reader.read(maximumEvents: 4096, below: limit)
                        } catch {
                            logger.error("reading the log failed; retrying in a second", metadata: ["error": "\(error)"])
                            try? await Task.sleep(for: .seconds(1))
                            break fill
                        }
                        for damage in batch.damage where damage.kind != .superseded {
                            logger.error("skipping damaged log bytes; their events cannot be forwarded", metadata: ["damage": "\(damage)"])
                        }
                        buffer = batch.events
                        bufferIndex = 0
                        if buffer.isEmpty {
                            if limit == .max {
                                exhausted = true  // a replay without an end reached the end of the log
                            } else {
                                // Durable, yet not readable: lost to damage. Do not wait for it forever.
                                progress.skip(to: limit)
                            }
                            break fill
                        }
                    }
                    let event = buffer[bufferIndex]
                    bufferIndex += 1
                    progress.skip(to: event.sequence)
                    progress.next = event.sequence + 1
                    if !kind.carries(event.event) || !(timeFilter?.contains(event.event.time.nanosecondsSinceEpoch) ?? true) {
                        statistics.passedOver += 1
                        progress.markDone(event.sequence)
                        continue
                    }
                    await pace()
                    if let pipeline {
                        ready.append(event)
                        if ready.count >= batchSize {
                            let batch = ready
                            ready = []
                            batchInFlight = true
                            group.addTask { await self.deliverBatch(batch, via: pipeline) }
                        }
                        continue
                    }
                    launch(event, in: &group)
                }
                if let pipeline, !ready.isEmpty, !batchInFlight, !stopping {
                    let batch = ready
                    ready = []
                    batchInFlight = true
                    group.addTask { await self.deliverBatch(batch, via: pipeline) }
                }
                while !stopping, singles < configuration.concurrency, !retries.isEmpty {
                    launch(retries.removeFirst(), in: &group)
                }
                statistics.position = progress.contiguous
                let inFlight = singles + (batchInFlight ? 1 : 0)
                // Save progress now and then, and whenever the lane is idle or the bound is near.
                if let log, progress.contiguous > progress.durableCursor {
                    let nearBound = progress.unsynced(saves: true) >= UInt64(configuration.maximumUnsyncedEvents / 2)
                    if inFlight == 0 || nearBound || ContinuousClock.now - lastCommit > .milliseconds(200) {
                        let position = progress.contiguous
                        do {
                            try await log.commitCursor(kind.cursorName, to: position)
                            progress.durableCursor = position
                            lastCommit = .now
                        } catch {
                            logger.error("could not save the upload cursor", metadata: ["error": "\(error)"])
                        }
                    }
                }
                if inFlight == 0 {
                    if stopping || Task.isCancelled || exhausted { break }
                    if let end, progress.contiguous >= end { break }
                    // The normal uploader with nothing to send: wait for new events.
                    let next = progress.next
                    if let log, bufferIndex == buffer.count, await log.durableSequence <= next {
                        let durable = await log.waitForDurable(beyond: next)
                        if durable <= next { break }  // the log closed or the task was cancelled
                    }
                    continue
                }
                guard let completion = await group.next() else { continue }
                switch completion {
                case .done(let sequence):
                    singles -= 1
                    finished(sequence, in: &group)
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
                if Task.isCancelled { stopping = true }
            }
        }
        statistics.position = progress.contiguous
        if let log, progress.contiguous > progress.durableCursor {
            try await log.commitCursor(kind.cursorName, to: progress.contiguous)
        }
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
    private func deliverBatch(_ events: [SequencedEvent], via pipeline: TrackingHitPipeline) async -> Completion {
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
            statistics.lastFailure = failure.reason
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
    private func deliver(_ event: SequencedEvent) async -> Completion {
        if deduplicates, case .registration(let registration) = event.event, registration.sdkForm == nil,
            (try? await store.isUnchanged(registration, within: configuration.registrationDeduplicationWindow)) == true
        {
            statistics.skippedDuplicates += 1
            return .done(event.sequence)
        }
        let request = request(for: event)
        var attempts = 0
        var counted = 0
        while !Task.isCancelled {
            guard await waitForPermission() else { break }
            let outcome = await transport.send(request, timeout: configuration.requestTimeout)
            attempts += 1
            switch outcome {
            case .delivered:
                hostAnswered()
                statistics.delivered += 1
                if deduplicates, case .registration(let registration) = event.event, registration.sdkForm == nil {
                    do { try await store.recordDelivered(registration) } catch {
                        logger.warning("could not remember a delivered registration; it may be sent again", metadata: ["error": "\(error)"])
                    }
                }
                return .done(event.sequence)
            case .rejected(let status, let body):
                hostAnswered()
                if await giveUp(event, url: request.url, status: status, body: body, reason: "rejected by the host (HTTP \(status))") {
                    return .done(event.sequence)
                }
                try? await Task.sleep(for: .seconds(1))
            case .redirected(let status, let location):
                // Only a sender that does not follow redirections returns this: a final answer.
                hostAnswered()
                if await giveUp(
                    event, url: request.url, status: status, body: "redirected to \(location)", reason: "redirected, not followed (HTTP \(status))")
                {
                    return .done(event.sequence)
                }
                try? await Task.sleep(for: .seconds(1))
            case .notSent:
                // Only a pipeline batch returns this; a single send always reaches the wire.
                attempts -= 1
            case .retryable(let reason, let retryAfter, let status, let body):
                // Stopping (Ctrl-C, SIGTERM) cancels requests under way: not a failure of the host.
                if Task.isCancelled { break }
                statistics.retries += 1
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
                statistics.lastFailure = reason
                // A failure while the breaker stays closed is this event's own (the host answers
                // others); during an outage only the event's age can end its retries.
                if openedUntil == nil { counted += 1 }
                let age = EventTime.now().nanosecondsSinceEpoch &- event.event.time.nanosecondsSinceEpoch
                let tooOld = age > configuration.maximumEventAge.nanoseconds
                if counted >= configuration.maximumAttempts || tooOld {
                    let why =
                        tooOld
                        ? "older than the maximum event age (\(configuration.maximumEventAge)) after \(attempts) attempts; last: \(reason)"
                        : "\(counted) failed attempts (the maximum) while the host answered others; last: \(reason)"
                    if await giveUp(event, url: request.url, status: status ?? 0, body: status == nil ? reason : body, reason: why) {
                        return .done(event.sequence)
                    }
                }
                let delay = retryAfter ?? configuration.backoff.delay(attempt: counted, using: &random)
                if firstFailure {
                    logger.warning(
                        "\(kind.rawValue) host failed: \(reason); retrying in \(delay.nanoseconds / 1_000_000) ms",
                        metadata: ["host": "\(host)", "backlog": "\(statistics.backlog)"]
                    )
                }
                do { try await Task.sleep(for: delay) } catch { break }
            }
        }
        return .abandoned(event.sequence)
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

    /// Waits until the breaker lets a request through; `false` when cancelled meanwhile.
    private func waitForPermission() async -> Bool {
        while !Task.isCancelled {
            switch breaker.permission(now: .now) {
            case .proceed:
                return true
            case .waitUntil(let instant):
                do { try await Task.sleep(until: instant, clock: .continuous) } catch { return false }
            case .waitForProbe:
                do { try await Task.sleep(for: .milliseconds(20)) } catch { return false }
            }
        }
        return false
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

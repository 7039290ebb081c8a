import CampaignProtocol
import RelayCore
import RelayLog

extension UploadLane {
    /// Hits per pipeline batch (well under the duplicate bound, so batches never stall the window).
    private var batchSize: Int { max(1, min(512, configuration.maximumUnsyncedEvents / 4)) }

    /// The driver of an ``EventSink``'s lane: the decisions are ``UploadLaneStateMachine``'s; this
    /// reads the log on the lane's thread, sends, saves the cursor and waits, and tells the state
    /// machine what happened.
    func runEachEvent(_ sink: any EventSink, until target: UInt64?) async throws(LogError) {
        let start: UInt64
        let end: UInt64?
        var times: Range<Int64>?
        var reader: LogFollower.Steps
        let log: WriteAheadLog?
        switch source {
        case .cursor(let wal):
            log = wal
            start = try await wal.startPosition(of: cursorName)
            end = target
            reader = LogFollower.Steps(log: wal, from: start)
        case .range(let stored, let sequences, let range):
            log = nil
            start = sequences.lowerBound
            end = sequences.upperBound
            times = range
            reader = stored.steps(from: start, damageLogger: logger)
        }
        statistics.position = start
        recordGauges()
        defer { reader.close() }
        var machine = UploadLaneStateMachine(
            settings: .init(
                carries: { sink.carries($0) }, orderingKey: { sink.orderingKey(of: $0) }, times: times, concurrency: configuration.concurrency,
                maximumUnsyncedEvents: configuration.maximumUnsyncedEvents,
                batchSize: routes.contains { $0.pipeline != nil } ? batchSize : nil, savesCursor: log != nil, end: end
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
                    // Nothing to read below the limit is an empty read; either way the statistics
                    // below follow (a `continue` here once kept them from seeing the last events passed over).
                    if machine.progress.next >= limit {
                        machine.read([], limit: limit)
                    } else {
                        do {
                            let batch = try reader.read(maximumEvents: 4096, below: limit)
                            machine.read(batch.events, limit: limit)
                        } catch {
                            logger.error("reading the log failed; retrying in a second", metadata: ["error": "\(error)"])
                            machine.readFailed(now: .now)
                        }
                    }
                case .send(let event):
                    group.addTask { await self.deliver(event, to: sink) }
                case .sendBatch(let events):
                    group.addTask { await self.deliverBatch(events, to: sink) }
                case .saveCursor(let position):
                    guard let log else { continue }
                    do {
                        try await log.commitCursor(cursorName, to: position)
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
            try await log.commitCursor(cursorName, to: position)
        }
    }

    /// Sends a batch of tracking hits through the pipeline of a healthy host (the hosts take turns,
    /// ``batchRoute()``). Hits that fail, that were redirected, or every hit while no host's breaker
    /// is closed come back to be sent one by one (``deliver(_:to:)``), with their own backoff,
    /// attempts and redirections.
    private func deliverBatch(_ events: [SequencedEvent], to sink: any EventSink) async -> UploadLaneStateMachine.Completion {
        // Not while every host's breaker is open, nor without the stream's lease: one by one, each waits.
        guard forwardingPermit.map({ $0.tenure != nil && $0.tenure == startedTenure }) ?? true, let route = batchRoute(),
            let pipeline = routes[route].pipeline
        else {
            return .batch(done: [], retry: events, abandoned: Task.isCancelled)
        }
        let host = routes[route].host
        var done: [UInt64] = []
        var retry: [SequencedEvent] = []
        // A registration erased since it was read is not sent (``erasures``).
        var events = events
        events.removeAll { event in
            guard erasures.contains(event.sequence) else { return false }
            done.append(event.sequence)
            return true
        }
        let requests = events.compactMap { sink.request(for: $0.event, to: host) }
        guard requests.count == events.count else { return .batch(done: done + events.map(\.sequence), retry: [], abandoned: false) }
        let outcomes = await pipeline.send(requests, limiter: routes[route].concurrency)
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
        if answered { destinationAnswered(route: route) }
        if let failure = firstFailure, !answered || failure.retryAfter != nil {
            markUnreachable()
            if let until = routes[route].breaker.recordFailure(now: .now, retryAfter: failure.retryAfter, using: &random) {
                logPause(reason: failure.reason, until: until, route: route)
            }
            recordBreakers()
            statistics.failed(failure.reason)
        }
        return .batch(done: done, retry: retry, abandoned: false)
    }

    /// Sends one event until it is done, or the task is cancelled.
    ///
    /// Done means delivered, skipped as unchanged (the sink's ``EventSink/unchangedRegistration(in:)``), or in
    /// the dead-letter store: rejected, or given up after ``UploadConfiguration/maximumAttempts``
    /// failures while the host answered others, or older than
    /// ``UploadConfiguration/maximumEventAge`` at a failure.
    private func deliver(_ event: SequencedEvent, to sink: any EventSink) async -> UploadLaneStateMachine.Completion {
        let unchangedCheck = deduplicates ? sink.unchangedRegistration(in: event.event) : nil
        if let store, let registration = unchangedCheck,
            (try? await store.isUnchanged(registration, within: configuration.registrationDeduplicationWindow)) == true
        {
            statistics.skippedDuplicates += 1
            return .done(event.sequence)
        }
        // Erased since it was read (``erasures``), or never carried: nothing goes out.
        guard !erasures.contains(event.sequence), let first = routes.first, sink.request(for: event.event, to: first.host) != nil else {
            statistics.skippedErased += 1
            return .done(event.sequence)
        }
        var retry = EventRetryStateMachine(configuration: configuration)
        while !Task.isCancelled {
            // One host at a time: an attempt goes to the host whose turn it is, a retry after a
            // failure to the next one that lets it through.
            guard let route = await waitForRoute() else { break }
            let (host, concurrency) = (routes[route].host, routes[route].concurrency)
            guard let request = sink.request(for: event.event, to: host) else { break }
            // A place among the requests in flight to the host, which its answers size.
            let permit = await concurrency.acquire()
            // Erased while it waited for its next attempt: it goes no further, and a probe the
            // breaker granted it goes to the next request. A registration's send is marked on the
            // wire meanwhile (the sink's ``EventSink/marksSendForErasure(_:)``), so that an erasure
            // beginning now waits for its answer.
            let registration: [UInt64] = sink.marksSendForErasure(event.event) ? [event.sequence] : []
            if !erasures.beginSending(registration).isEmpty {
                concurrency.release(permit, .ignored)
                routes[route].breaker.probeNotSent()
                statistics.skippedErased += 1
                return .done(event.sequence)
            }
            let outcome = await transport.send(request, timeout: configuration.requestTimeout)
            concurrency.release(permit, ConcurrencyLimiter.signal(of: outcome))
            if case .delivered = outcome {
                erasures.endSending(registration, deliveredBy: cursorName)
            } else {
                erasures.endSending(registration, deliveredBy: nil)
            }
            var breakerOpened = false
            var firstFailure = false
            switch outcome {
            case .delivered, .rejected, .redirected:
                destinationAnswered(route: route)
            case .notSent:
                break
            case .retryable(let reason, let retryAfter, _, _):
                // Stopping (Ctrl-C, SIGTERM) cancels requests under way: not a failure of the host.
                if Task.isCancelled { return .abandoned(event.sequence) }
                let failed = destinationFailed(reason: reason, retryAfter: retryAfter, route: route)
                if !failed.firstFailure, let until = failed.openedUntil, failed.wasUp || statistics.lastFailure != reason {
                    logPause(reason: reason, until: until, route: route)
                }
                statistics.failed(reason)
                (breakerOpened, firstFailure) = (failed.openedUntil != nil, failed.firstFailure)
            }
            let age = EventTime.now().nanosecondsSinceEpoch &- event.event.time.nanosecondsSinceEpoch
            switch retry.answer(outcome, breakerOpened: breakerOpened, age: age, using: &random) {
            case .delivered:
                statistics.delivered += 1
                metrics.delivered.increment()
                if let registration = unchangedCheck {
                    do { try await store?.recordDelivered(registration) } catch {
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
                        "\(destinationName) failed: \(reason); retrying in \(delay.humanText)",
                        metadata: ["host": "\(endpoint)", "backlog": "\(statistics.backlog)"]
                    )
                }
                if delay > .zero {
                    do { try await Task.sleep(for: delay) } catch { break }
                }
            }
        }
        return .abandoned(event.sequence)
    }

}

import CampaignProtocol
import RelayCore
import RelayLog

extension UploadLane {
    /// The driver of a ``BatchSink``'s lane: batches go one at a time, in log order, each covering
    /// the sequence numbers from where the last one ended (damaged ones included), never across an
    /// epoch of the data directory, since the destination keys its marks on (relay, epoch). The
    /// cursor moves only when the destination took a batch (its own fdatasync done); a batch whose
    /// answer was lost is sent again, and the destination answers it "already stored".
    func runOrderedBatches(_ sink: any BatchSink, log: WriteAheadLog, until target: UInt64?) async throws(LogError) {
        let saved = try await log.startPosition(of: cursorName)
        var position = saved
        statistics.position = position
        recordGauges()
        var reader = LogFollower.Steps(log: log, from: position)
        defer { reader.close() }
        // The backlog counts to the log's durable end, which moves while a batch is under way.
        let following = Task { await self.followDurableEnd(of: log, until: target) }
        defer { following.cancel() }
        let identity = log.identity
        while !Task.isCancelled {
            var limit = await log.durableSequence
            if let target { limit = min(limit, target) }
            recordBacklog(end: limit)
            if position >= limit {
                if let target, position >= target { break }
                if await log.waitForDurable(beyond: position) <= position { break }
                continue
            }
            let epoch = identity.epochNumber(of: position)
            let epochEnd = identity.epochs.first { $0.number == epoch + 1 }?.firstSequence ?? UInt64.max
            let end = min(limit, epochEnd)
            let batch: LogReadBatch
            do {
                batch = try reader.read(maximumEvents: sink.batchEvents, below: end)
            } catch {
                logger.error("reading the log failed; retrying in a second", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            // Sequences the log holds no event for (damage) are covered too: the batch says the lane is past them.
            let batchEnd = batch.events.isEmpty ? end : batch.position
            // Erased registrations go nowhere (the batch covers their sequence numbers all the
            // same), nor do registrations erased since the reader read them.
            let events = batch.events.filter { event in
                if case .erased = event.event { return false }
                return !erasures.contains(event.sequence)
            }
            statistics.oldestUnsentEvent = events.first?.event.time
            recordGauges()
            let covered = position..<batchEnd
            let batchOutcome = await send(events, of: sink, sequences: covered) { events in
                sink.request(for: events, sequences: covered, epoch: epoch, relayID: identity.relayID)
            }
            switch batchOutcome {
            case .taken(let sent):
                statistics.oldestUnsentEvent = nil
                statistics.delivered += sent
                metrics.delivered.increment(by: sent)
                position = batchEnd
                do {
                    try await log.commitCursor(cursorName, to: position)
                } catch {
                    logger.error("could not save the \(name) lane's cursor", metadata: ["error": "\(error)"])
                }
            case .resendFrom(let expected):
                logger.warning(
                    "the \(destinationName) lacks earlier events; sending again from there",
                    metadata: ["expected": "\(expected)", "was-at": "\(position)"])
                position = max(expected, await log.oldestSequence)
                reader.move(to: position, in: log)
            case .stopped:
                // Cancelled, or the stream's lease changed hands: the position stays where the
                // last 200 left it, and the run ends (``run(until:)`` starts it again from the
                // cursor after a change of hands), never reading on past the batch not taken.
                statistics.position = position
                recordGauges()
                if position > saved { try await log.commitCursor(cursorName, to: position) }
                return
            }
            statistics.position = position
            recordGauges()
        }
        if position > saved { try await log.commitCursor(cursorName, to: position) }
    }

    private enum BatchOutcome {
        /// Taken, with the number of events the batch carried.
        case taken(Int)
        case resendFrom(UInt64)
        /// Cancelled before the batch was taken.
        case stopped
    }

    /// Sends one batch of `events`, covering `sequences`, until the destination takes it, asks for
    /// earlier events, or the task is cancelled. A registration erased between two attempts is
    /// left out of the next (`request` builds it again without), and one on the wire is marked so
    /// in ``erasures``, so that an erasure beginning meanwhile waits for the answer.
    private func send(
        _ events: [SequencedEvent], of sink: any BatchSink, sequences: Range<UInt64>, request: ([SequencedEvent]) -> CampaignRequest
    ) async -> BatchOutcome {
        var events = events
        var registrations = events.compactMap { event -> UInt64? in
            if case .registration = event.event { event.sequence } else { nil }
        }
        var built = request(events)
        var counted = 0
        while !Task.isCancelled {
            guard await waitForPermission() else { break }
            let masked = erasures.beginSending(registrations)
            if !masked.isEmpty {
                events.removeAll { masked.contains($0.sequence) }
                registrations.removeAll { masked.contains($0) }
                statistics.skippedErased += masked.count
                built = request(events)
            }
            let outcome = await transport.send(built, timeout: configuration.requestTimeout)
            let answer = sink.answer(outcome, sequences: sequences)
            if case .taken = answer {
                erasures.endSending(registrations, deliveredBy: cursorName)
            } else {
                erasures.endSending(registrations, deliveredBy: nil)
            }
            let delay: Duration
            switch answer {
            case .taken:
                destinationAnswered()
                return .taken(events.count)
            case .resendFrom(let expected):
                destinationAnswered()
                return .resendFrom(expected)
            case .refused(let reason, let wait, let logged):
                destinationAnswered()
                statistics.lastFailure = reason
                logger.error("\(logged)", metadata: ["answer": "\(reason)", "sequences": "\(sequences.lowerBound)-\(sequences.upperBound)"])
                delay = wait
            case .sendAgain:
                delay = .zero
            case .failed(let reason, let retryAfter):
                if Task.isCancelled { return .stopped }
                let failed = destinationFailed(reason: reason, retryAfter: retryAfter)
                if failed.firstFailure || failed.openedUntil != nil && statistics.lastFailure != reason {
                    logger.warning(
                        "\(destinationName) unreachable; events wait in the log",
                        metadata: ["relay": "\(endpoint)", "reason": "\(reason)", "backlog": "\(statistics.backlog)"])
                }
                statistics.failed(reason)
                if failed.openedUntil == nil { counted += 1 }
                delay = retryAfter ?? configuration.backoff.delay(attempt: counted, using: &random)
            }
            if delay > .zero {
                do { try await Task.sleep(for: delay) } catch { break }
            }
        }
        return .stopped
    }

    /// Records the backlog, with `end` the end of the log the lane knows of (the durable end, or
    /// the target before it). Called wherever the lane's position or that end moves.
    private func recordBacklog(end: UInt64) {
        statistics.end = max(statistics.end, end)
        metrics.backlog.record(statistics.backlog)
    }

    /// Records the backlog each time the log's durable end moves (below `target`, when given),
    /// until cancelled or the log closes: the lane's own loop does not look while it sends.
    private func followDurableEnd(of log: WriteAheadLog, until target: UInt64?) async {
        var durable = await log.durableSequence
        while !Task.isCancelled {
            recordBacklog(end: min(durable, target ?? .max))
            let next = await log.waitForDurable(beyond: durable)
            guard next > durable else { return }  // the log closed, or the lane stopped
            durable = next
        }
    }
}

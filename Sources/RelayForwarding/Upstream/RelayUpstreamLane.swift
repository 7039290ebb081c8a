public import CampaignProtocol
public import Logging
import RelayChain
public import RelayCore
public import RelayIO
public import RelayLog

/// Hands every event of the log, hits and registrations alike, to a central relay
/// (`POST /v1/relay/batches`, docs/relay-protocol.md) instead of to Campaign.
///
/// Batches go one at a time, in log order, each covering the sequence numbers from where the last
/// one ended, never across an epoch of the data directory. The lane's cursor moves only when the
/// central relay answered 200 (its own fdatasync done); a batch whose answer was lost is sent again
/// and answered "already stored". Failures are retried with the uploader's backoff, `Retry-After`
/// and circuit breaker.
public actor RelayUpstreamLane: BlockingActor, BreakerGate {
    /// The lane's name in progress, summaries and metrics, beside the uploader's `tracking` and `marketing`.
    public static let laneName = "relay"
    /// The log cursor of the lane (named as the uploader's lanes' cursors are, `upload-<lane>`).
    public static let cursorName = "upload-\(laneName)"
    /// The lane as a consumer of the log: its cursor is its position.
    public static let consumer = LogConsumerDeclaration.cursorFile(cursorName)

    /// The lane's thread: it reads and decodes the log.
    public nonisolated let executor: BlockingExecutor
    let log: WriteAheadLog
    let central: CampaignHost
    let token: String
    let transport: any CampaignTransport
    let configuration: UploadConfiguration
    let batchEvents: Int
    let logger: Logger
    /// What the lane records as it happens (batches taken, retries, backlog, oldest waiting event,
    /// unreachable since).
    let metrics: LaneMetrics
    var breaker: CircuitBreakerStateMachine
    private var random = SystemRandomNumberGenerator()
    private var statistics = LaneStatistics()

    /// A lane from `log` to the relay at `central`, presenting `token`; at most `batchEvents`
    /// events per batch. The lane records what it does through `metrics` as it happens.
    public init(
        log: WriteAheadLog, central: CampaignHost, token: String, transport: any CampaignTransport, configuration: UploadConfiguration,
        batchEvents: Int = 10_000, logger: Logger, metrics: LaneMetrics = .none
    ) {
        self.metrics = metrics
        self.executor = BlockingExecutor(name: "lane-relay", priority: configuration.threadPriority)
        self.log = log
        self.central = central
        self.token = token
        self.transport = transport
        self.configuration = configuration
        self.batchEvents = max(1, min(batchEvents, RelayBatchBody.maximumEvents))
        self.logger = logger
        self.breaker = CircuitBreakerStateMachine(threshold: configuration.breakerThreshold, backoff: configuration.backoff)
    }

    /// What the lane has done so far (`delivered` counts events the central relay took).
    public var stats: LaneStatistics { statistics }

    /// Where the lane stands with the central relay, for `/readyz` and the metrics.
    public struct UpstreamState: Sendable, Hashable {
        /// Since when the central relay has not answered (wall clock); `nil` while it answers.
        public var unreachableSince: EventTime?
        /// Durable events not handed on yet.
        public var backlog: UInt64
        /// The time of the oldest event not handed on yet; `nil` when there is none.
        public var oldestWaitingEvent: EventTime?
        /// The last failure, in words; `nil` when the last batch was taken.
        public var lastFailure: String?
    }

    /// Where the lane stands now (the backlog counted to the log's durable end).
    public func state() async -> UpstreamState {
        let durable = await log.durableSequence
        return UpstreamState(
            unreachableSince: unreachableSince, backlog: durable > statistics.position ? durable - statistics.position : 0,
            oldestWaitingEvent: oldestWaitingEvent, lastFailure: statistics.lastFailure)
    }

    private var unreachableSince: EventTime?
    private var oldestWaitingEvent: EventTime?

    /// Hands on every event below `target` (`nil`: follow the log until the task is cancelled or
    /// the log closes), then returns with its cursor saved.
    ///
    /// - Throws: ``LogError/undeclaredConsumer(_:declared:)`` when the log was opened without
    ///   ``consumer``; ``LogError`` when the cursor cannot be saved at the end.
    public func run(until target: UInt64?) async throws(LogError) {
        let saved = try await log.startPosition(of: Self.cursorName)
        var position = saved
        statistics.position = position
        var reader = log.reader(from: position)
        defer { reader.close() }
        // The backlog counts to the log's durable end, which moves while a batch is under way.
        let following = Task { await self.followDurableEnd(until: target) }
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
            // A batch never spans two epochs: the central relay keys its marks on (relay, epoch).
            let epoch = identity.epochNumber(of: position)
            let epochEnd = identity.epochs.first { $0.number == epoch + 1 }?.firstSequence ?? UInt64.max
            let end = min(limit, epochEnd)
            let batch: LogReadBatch
            do {
                batch = try reader.read(maximumEvents: batchEvents, below: end)
            } catch {
                logger.error("reading the log failed; retrying in a second", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            // Sequences the log holds no event for (damage) are covered too: the batch says the lane is past them.
            let batchEnd = batch.events.isEmpty ? end : batch.position
            // Request identities go along and the central relay drops them (docs/relay-protocol.md).
            let events = batch.events
            oldestWaitingEvent = events.first?.event.time
            metrics.record(oldestUnsent: oldestWaitingEvent)
            switch await send(events, epoch: epoch, sequences: position..<batchEnd, relayID: identity.relayID) {
            case .taken:
                oldestWaitingEvent = nil
                metrics.record(oldestUnsent: nil)
                statistics.delivered += events.count
                metrics.delivered.increment(by: events.count)
                position = batchEnd
                do {
                    try await log.commitCursor(Self.cursorName, to: position)
                } catch {
                    logger.error("could not save the relay lane's cursor", metadata: ["error": "\(error)"])
                }
            case .resendFrom(let expected):
                logger.warning(
                    "the central relay lacks earlier events; sending again from there",
                    metadata: ["expected": "\(expected)", "was-at": "\(position)"])
                position = max(expected, await log.oldestSequence)
                reader.close()
                reader = log.reader(from: position)
            case .stopped:
                break  // cancelled: the loop ends, the position stays where the last 200 left it
            }
            statistics.position = position
            recordBacklog(end: statistics.end)
        }
        if position > saved { try await log.commitCursor(Self.cursorName, to: position) }
    }

    private enum BatchOutcome {
        case taken
        case resendFrom(UInt64)
        /// Cancelled before the batch was taken.
        case stopped
    }

    /// Sends one batch until the central relay takes it, asks for earlier events, or the task is cancelled.
    private func send(_ events: [SequencedEvent], epoch: UInt32, sequences: Range<UInt64>, relayID: String) async -> BatchOutcome {
        let request = CampaignRequest(
            method: .post, host: central, pathAndQuery: "/v1/relay/batches",
            headers: [
                ("Authorization", "Bearer \(token)"), ("Relay-Id", relayID), ("Relay-Epoch", String(epoch)),
                ("Relay-Sequences", "\(sequences.lowerBound)-\(sequences.upperBound)"), ("Content-Type", "application/x-campaign-relay-batch"),
            ],
            body: RelayBatchBody.encode(events, first: sequences.lowerBound)
        )
        var counted = 0
        while !Task.isCancelled {
            guard await waitForPermission() else { break }
            let outcome = await transport.send(request, timeout: configuration.requestTimeout)
            let delay: Duration
            switch outcome {
            case .delivered:
                hostAnswered()
                return .taken
            case .rejected(409, let body):
                hostAnswered()
                if let expected = Self.expected(in: body), expected < sequences.lowerBound { return .resendFrom(expected) }
                delay = .seconds(1)
                logger.error("the central relay answered 409 without a usable expected sequence", metadata: ["body": "\(body)"])
            case .rejected(let status, let body):
                // 400, 401, 403, 413: the central relay refuses; events are kept and tried again.
                hostAnswered()
                statistics.lastFailure = "HTTP \(status): \(body)"
                logger.error(
                    "the central relay refuses this relay's batches; fix what it says, the events wait",
                    metadata: ["status": "\(status)", "answer": "\(body)", "sequences": "\(sequences.lowerBound)-\(sequences.upperBound)"])
                delay = .seconds(status == 403 ? 60 : 10)
            case .redirected(let status, let location):
                hostAnswered()
                logger.error("the central relay redirects; give its final URL", metadata: ["status": "\(status)", "location": "\(location)"])
                delay = .seconds(10)
            case .notSent:
                delay = .zero
            case .retryable(let reason, let retryAfter, _, _):
                if Task.isCancelled { return .stopped }
                statistics.retries += 1
                metrics.retries.increment()
                let now = ContinuousClock.now
                let firstFailure = statistics.lastFailure == nil
                if unreachableSince == nil {
                    unreachableSince = EventTime.now()
                    metrics.record(unreachableSince: unreachableSince)
                }
                let opened = breaker.recordFailure(now: now, retryAfter: retryAfter, using: &random)
                if firstFailure || opened != nil && statistics.lastFailure != reason {
                    logger.warning(
                        "central relay unreachable; events wait in the log",
                        metadata: ["relay": "\(central)", "reason": "\(reason)", "backlog": "\(statistics.backlog)"])
                }
                statistics.lastFailure = reason
                if opened == nil { counted += 1 }
                delay = retryAfter ?? configuration.backoff.delay(attempt: counted, using: &random)
            }
            if delay > .zero {
                do { try await Task.sleep(for: delay) } catch { break }
            }
        }
        return .stopped
    }

    /// `expected` of a 409 answer: `{"error":"…","expected":X}`.
    static func expected(in body: String) -> UInt64? {
        guard case .object(let members)? = try? JSONParser.parse(body),
            case .number(let text)? = members.first(where: { $0.name == "expected" })?.value
        else { return nil }
        return UInt64(text)
    }

    private func hostAnswered() {
        if let since = unreachableSince {
            let seconds = Double(EventTime.now().nanosecondsSinceEpoch - since.nanosecondsSinceEpoch) / 1e9
            logger.notice("central relay answers again", metadata: ["relay": "\(central)", "was-unreachable-for-seconds": "\(seconds)"])
        }
        breaker.recordAnswer()
        statistics.lastFailure = nil
        unreachableSince = nil
        metrics.record(unreachableSince: nil)
    }

    /// Records the backlog, with `end` the end of the log the lane knows of (the durable end, or
    /// the target before it). Called wherever the lane's position or that end moves.
    private func recordBacklog(end: UInt64) {
        statistics.end = max(statistics.end, end)
        metrics.backlog.record(statistics.backlog)
    }

    /// Records the backlog each time the log's durable end moves (below `target`, when given),
    /// until cancelled or the log closes: the lane's own loop does not look while it sends.
    private func followDurableEnd(until target: UInt64?) async {
        var durable = await log.durableSequence
        while !Task.isCancelled {
            recordBacklog(end: min(durable, target ?? .max))
            let next = await log.waitForDurable(beyond: durable)
            guard next > durable else { return }  // the log closed, or the lane stopped
            durable = next
        }
    }
}

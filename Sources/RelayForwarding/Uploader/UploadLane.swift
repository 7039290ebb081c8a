import CampaignProtocol
public import Logging
public import RelayCore
public import RelayIO
public import RelayLog

/// The one sink driver: forwards the log's events to one destination, a sink that says how events
/// become requests and what the answers mean, while the lane owns everything else.
///
/// Two shapes of destination, one driver:
/// - an ``EventSink`` (the Campaign tracking and marketing hosts) takes one request per event. The
///   lane reads in log order and sends with bounded concurrency; each event is done when the host
///   accepted it (200), rejected it permanently (it goes to the dead-letter store), or it was
///   skipped. Retryable failures are retried per event with full-jitter backoff, honouring
///   `Retry-After`. The cursor only ever passes events that are done, and the lane never sends
///   beyond ``UploadConfiguration/maximumUnsyncedEvents`` past it, so a crash re-sends at most that
///   many events. The decisions are ``UploadLaneStateMachine``'s.
/// - a ``BatchSink`` (a central relay) takes every event in ordered batches, one at a time, each
///   covering the sequence numbers from where the last one ended and never two epochs; the cursor
///   moves only when a batch was taken, and a batch whose answer was lost goes again.
///
/// Either way the lane waits behind a circuit breaker per host (an event sink's spare hosts have
/// their own and share the load, ``HostRoute``), backs off, records its
/// metrics as things happen (``LaneMetrics``) and keeps its statistics (``stats``, ``state()``).
public actor UploadLane: BlockingActor, BreakerGate {
    /// Where a lane reads and how it remembers its place.
    public enum Source: Sendable {
        /// The normal uploader: from its durable cursor in the open log, following new events. The
        /// log was opened with the lane's sink's ``Sink/consumer``.
        case cursor(WriteAheadLog)
        /// A replay: the events of `sequences` (and, when given, with event times in `times`) of a
        /// log kept in files (with an archive's segments) or in PostgreSQL, independent of any cursor.
        case range(StoredLog, sequences: Range<UInt64>, times: Range<Int64>?)
    }

    /// What the lane sends to, and in which shape.
    enum Destination: Sendable {
        /// One request per event.
        case eachEvent(any EventSink)
        /// Ordered batches of every event.
        case orderedBatches(any BatchSink)
    }

    /// The lane's name, its sink's (`tracking`, `marketing`, `relay`; `tracking_<tenant>`,
    /// `marketing_<tenant>` for a tenant's): its cursor is `upload-<name>`.
    public nonisolated let name: String
    /// The tenant whose events the lane carries; `nil` for the default tenant's lanes and the relay
    /// lane (which carries every tenant's).
    public nonisolated let tenant: TenantName?
    /// What kind of destination the lane sends to (its sink's ``Sink/kind``).
    public nonisolated let kind: SinkKind
    /// The lane's thread: it reads and decodes the log (blocking `pread`s and inflating), at
    /// ``UploadConfiguration/threadPriority``.
    public nonisolated let executor: BlockingExecutor
    let destination: Destination
    /// How log lines name the destination ("tracking host", "central relay").
    let destinationName: String
    /// Where the lane sends (its sink's ``Sink/endpoint``), for log lines and the status page.
    public nonisolated let endpoint: String
    let transport: any CampaignTransport
    /// Where given-up events go (the event sinks'); a batch sink's refusals wait in the log instead.
    let store: ForwardingStore?
    let source: Source
    /// The registrations being erased in this process (the log's ``WriteAheadLog/erasureMask``):
    /// one the lane read before its erasure began is not sent. A replay's reader masks the
    /// unfinished erasures itself.
    let erasures: ErasureMask
    let configuration: UploadConfiguration
    let logger: Logger
    let deduplicates: Bool
    /// The hosts of an event sink's destination (its first host, then its spares), each with its
    /// breaker, its limit of requests in flight (each attempt, single or pipelined, holds a permit
    /// of the host it goes to) and its pipeline; empty for a batch sink's lane.
    var routes: [HostRoute]
    /// Where the next request starts looking for a host that lets it through: the hosts take turns.
    var nextRoute = 0
    /// What the lane records as it happens (deliveries, retries, its backlog and oldest owed event).
    let metrics: LaneMetrics
    /// Whether this relay may forward now (``UploadConfiguration/forwardingPermit``).
    nonisolated var forwardingPermit: (any ForwardingPermit)? { configuration.forwardingPermit?.permit }
    /// The lease's token this run of the lane started under (``ForwardingPermit``).
    var startedTenure: Int64?
    var breaker: CircuitBreakerStateMachine
    var random = SystemRandomNumberGenerator()
    var statistics = LaneStatistics()
    /// Since when the destination has not answered (wall clock); `nil` while it answers.
    var unreachableSince: EventTime?

    /// A lane for the events `sink` carries. Registrations equal to the last one delivered for
    /// their token are skipped when `deduplicates` (the normal uploader; replays resend
    /// everything). With a `pipeline`, healthy-host batches of tracking hits go through it. The
    /// lane records its deliveries, retries and gauges through `metrics` as they happen.
    public init(
        sink: any EventSink, transport: any CampaignTransport, store: ForwardingStore, source: Source, configuration: UploadConfiguration,
        deduplicates: Bool, logger: Logger, pipelines: [TrackingHitPipeline] = [], metrics: LaneMetrics = .none
    ) {
        self.init(
            destination: .eachEvent(sink), name: sink.name, tenant: sink.tenant, kind: sink.kind, endpoint: sink.endpoint,
            destinationName: sink.destinationName, transport: transport, store: store, source: source, configuration: configuration,
            deduplicates: deduplicates, logger: logger, hosts: sink.hosts, pipelines: pipelines, metrics: metrics)
    }

    /// A lane handing every event of `log` to `sink` in ordered batches, from the lane's cursor
    /// (the log was opened with the sink's ``Sink/consumer``).
    public init(
        sink: any BatchSink, log: WriteAheadLog, transport: any CampaignTransport, configuration: UploadConfiguration, logger: Logger,
        metrics: LaneMetrics = .none
    ) {
        self.init(
            destination: .orderedBatches(sink), name: sink.name, tenant: sink.tenant, kind: sink.kind, endpoint: sink.endpoint,
            destinationName: sink.destinationName,
            transport: transport, store: nil, source: .cursor(log), configuration: configuration, deduplicates: false, logger: logger,
            hosts: [], pipelines: [], metrics: metrics)
    }

    private init(
        destination: Destination, name: String, tenant: TenantName?, kind: SinkKind, endpoint: String, destinationName: String,
        transport: any CampaignTransport,
        store: ForwardingStore?, source: Source, configuration: UploadConfiguration, deduplicates: Bool, logger: Logger,
        hosts: [CampaignHost], pipelines: [TrackingHitPipeline], metrics: LaneMetrics
    ) {
        self.destination = destination
        self.name = name
        self.tenant = tenant
        self.kind = kind
        self.endpoint = endpoint
        self.destinationName = destinationName
        self.metrics = metrics
        self.executor = BlockingExecutor(name: "lane-\(name)", priority: configuration.threadPriority)
        self.transport = transport
        self.store = store
        self.source = source
        switch source {
        case .cursor(let log): self.erasures = log.erasureMask
        case .range: self.erasures = ErasureMask()
        }
        self.configuration = configuration
        self.deduplicates = deduplicates
        self.logger = logger
        self.breaker = CircuitBreakerStateMachine(threshold: configuration.breakerThreshold, backoff: configuration.backoff)
        self.routes = hosts.map { host in
            let pipeline = pipelines.first { $0.host == host }
            let handles = metrics.hosts[host.description]
            // Its timer on the pipeline's loop, where most permits are taken and the grants go.
            let limiter = ConcurrencyLimiter(
                ceiling: configuration.concurrency, adaptive: configuration.adaptiveConcurrency, maximumRate: configuration.maximumRate,
                timerLoop: pipeline?.eventLoop, onPaced: { handles?.paced.increment(by: $0) },
                onChange: { _, snapshot in handles?.record(snapshot) })
            handles?.record(limiter.snapshot)
            return HostRoute(
                host: host, breaker: CircuitBreakerStateMachine(threshold: configuration.breakerThreshold, backoff: configuration.backoff),
                concurrency: limiter, pipeline: pipeline)
        }
    }

    /// The lane's log cursor, `upload-<name>`.
    nonisolated var cursorName: String { "upload-\(name)" }

    /// What the lane has done so far.
    public var stats: LaneStatistics {
        var current = statistics
        // An event sink's destination is served while any of its hosts' breakers is closed.
        let served = routes.first { $0.breaker.isClosed }
        current.breaker = (served ?? routes.first)?.breaker.stateName ?? breaker.stateName
        return current
    }

    /// Each host of an event sink's destination (the first, then the spares): its breaker and its
    /// limit; empty for a batch sink's lane.
    public func hostStates() -> [HostState] {
        routes.map { HostState(url: $0.host.description, breaker: $0.breaker.stateName, concurrency: $0.concurrency.snapshot) }
    }

    /// Hits delivered through the pipeline (the rest went one request at a time).
    public internal(set) var pipelinedDeliveries = 0

    /// Where a lane stands with its destination, for `/readyz` and the metrics.
    public struct UpstreamState: Sendable, Hashable {
        /// Since when the destination has not answered (wall clock); `nil` while it answers.
        public var unreachableSince: EventTime?
        /// Durable events not done yet.
        public var backlog: UInt64
        /// The time of the oldest event the destination is still owed; `nil` when there is none.
        public var oldestWaitingEvent: EventTime?
        /// The last failure, in words; `nil` when the destination answers.
        public var lastFailure: String?
    }

    /// Where the lane stands now (the backlog counted to the log's durable end, for a lane of the open log).
    public func state() async -> UpstreamState {
        var end = statistics.end
        if case .cursor(let log) = source { end = max(end, await log.durableSequence) }
        return UpstreamState(
            unreachableSince: unreachableSince, backlog: end > statistics.position ? end - statistics.position : 0,
            oldestWaitingEvent: statistics.oldestUnsentEvent, lastFailure: statistics.lastFailure)
    }

    /// Works until every event below `target` is done (`nil`: follow the log until the task is
    /// cancelled or the log closes). Returns early, with its cursor saved, when cancelled.
    ///
    /// - Throws: ``LogError/undeclaredConsumer(_:declared:)`` when the log of a ``Source/cursor(_:)``
    ///   was opened without the lane's consumer; ``LogError`` when the cursor cannot be saved at the end.
    public func run(until target: UInt64?) async throws(LogError) {
        while true {
            startedTenure = forwardingPermit?.tenure
            do throws(LogError) {
                switch destination {
                case .eachEvent(let sink): try await runEachEvent(sink, until: target)
                case .orderedBatches(let sink):
                    guard case .cursor(let log) = source else { return }
                    try await runOrderedBatches(sink, log: log, until: target)
                }
            } catch {
                guard restartsOnNewTenure(until: target) else { throw error }
                logger.notice("a lane stopped as its stream's lease changed hands", metadata: ["error": "\(error)"])
            }
            guard restartsOnNewTenure(until: target), case .cursor(let log) = source else { return }
            // The lease changed hands: another relay forwarded the stream meanwhile and moved this
            // lane's cursor in the log's database. Start again from there, not from where this
            // run had got to, or all it forwarded would go to the host twice.
            while forwardingPermit?.tenure == nil {
                do { try await Task.sleep(for: .milliseconds(100)) } catch { return }
            }
            try await log.reloadCursor(cursorName)
            let position = try await log.startPosition(of: cursorName)
            logger.notice("the stream's lease is this relay's again; the lane starts from its cursor", metadata: ["position": "\(position)"])
        }
    }

    /// Whether a run that ended goes again: a lane following the log under a lease, not stopped.
    private func restartsOnNewTenure(until target: UInt64?) -> Bool {
        forwardingPermit != nil && target == nil && !Task.isCancelled
    }

    /// Records the gauges that follow the lane's statistics: its backlog (position, end) and its
    /// oldest owed event. Called wherever those may have moved.
    func recordGauges() {
        metrics.backlog.record(statistics.backlog)
        metrics.record(oldestUnsent: statistics.oldestUnsentEvent)
    }

    /// Records a retryable failure of the destination (of its host `route`, an index of
    /// ``routes``; `nil`: the batch sink's one host): the retry, when it became unreachable, and the
    /// host's circuit breaker. Returns until when that breaker is open after it (the host's failure,
    /// which does not count against an event), whether it is the first failure since the
    /// destination last answered, and whether the host's breaker was closed before it.
    func destinationFailed(reason: String, retryAfter: Duration?, route: Int? = nil) -> (
        openedUntil: ContinuousClock.Instant?, firstFailure: Bool, wasUp: Bool
    ) {
        statistics.retries += 1
        metrics.retries.increment()
        markUnreachable()
        let firstFailure = statistics.lastFailure == nil
        guard let route else {
            let wasUp = breaker.failingSince == nil
            let openedUntil = breaker.recordFailure(now: .now, retryAfter: retryAfter, using: &random)
            if !breaker.isClosed { metrics.breakerOpen?.record(1) }
            return (openedUntil, firstFailure, wasUp)
        }
        let wasUp = routes[route].breaker.failingSince == nil
        let openedUntil = routes[route].breaker.recordFailure(now: .now, retryAfter: retryAfter, using: &random)
        recordBreakers()
        return (openedUntil, firstFailure, wasUp)
    }

    /// The breaker gauges of an event sink's lane: each host's, and the lane's (1 while no host's
    /// breaker is closed: nothing is sent but probes).
    func recordBreakers() {
        var served = false
        for route in routes {
            served = served || route.breaker.isClosed
            metrics.hosts[route.host.description]?.breakerOpen.record(route.breaker.isClosed ? 0 : 1)
        }
        metrics.breakerOpen?.record(served ? 0 : 1)
    }

    /// Notes when the destination stopped answering, unless it already had.
    func markUnreachable() {
        guard unreachableSince == nil else { return }
        unreachableSince = EventTime.now()
        metrics.record(unreachableSince: unreachableSince)
    }

    /// Logs that the destination (its host `route`) is failing and sends to it pause until `until`
    /// (the breaker opened). On a busy machine `until` may have passed by the time this runs: the
    /// next try is then now.
    func logPause(reason: String, until: ContinuousClock.Instant, route: Int? = nil) {
        let failingSince = route.map { routes[$0].breaker.failingSince } ?? breaker.failingSince
        logger.warning(
            "\(destinationName) is failing; pausing sends to it",
            metadata: [
                "host": "\(route.map { routes[$0].host.description } ?? endpoint)", "reason": "\(reason)",
                "down-since": "\(failingSince.map { "\((ContinuousClock.now - $0).humanText) ago" } ?? "now")",
                "next-try-in": "\(max(.zero, until - .now).humanText)", "backlog": "\(statistics.backlog)",
                "hosts": "\(max(1, routes.count))",
            ]
        )
    }

    /// The destination answered (whatever it said), through its host `route` (`nil`: the batch
    /// sink's one host): that host's breaker closes, and the destination's failure ends.
    func destinationAnswered(route: Int? = nil) {
        let failingSince = route.map { routes[$0].breaker.failingSince } ?? breaker.failingSince
        if let since = failingSince {
            logger.notice(
                "\(destinationName) answers again",
                metadata: [
                    "host": "\(route.map { routes[$0].host.description } ?? endpoint)", "was-down-for": "\((ContinuousClock.now - since).humanText)",
                ])
        }
        if let route {
            routes[route].breaker.recordAnswer()
            recordBreakers()
        } else {
            breaker.recordAnswer()
            metrics.breakerOpen?.record(0)
        }
        statistics.lastFailure = nil
        if unreachableSince != nil {
            unreachableSince = nil
            metrics.record(unreachableSince: nil)
        }
    }

    /// Puts `event` in the dead-letter store with the host's last answer; `false` (logged) when
    /// the store failed, and the caller tries again later.
    func giveUp(_ event: SequencedEvent, url: String, status: Int, body: String, reason: String) async -> Bool {
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
        guard let store else { return true }
        do {
            try await store.deadLetter(
                sequence: event.sequence, event: event.event, url: url, status: status, body: body, reason: reason,
                stream: configuration.adoptedStream)
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

}

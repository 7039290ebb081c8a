import CampaignProtocol
import Logging
import RelayAggregator
import RelayForwarding
import RelayLog
import ServiceLifecycle

/// Applies the log's retention now and then, so that an idle log (no cursor moving) still lets
/// its old segments go, and closes the log once everything that writes or reads it has stopped
/// (it is shut down last).
struct LogService: Service {
    let log: WriteAheadLog

    /// How often the retention is applied: a tenth of the retention age, within 1 s to 1 min.
    static func retentionInterval(for retention: LogRetention) -> Duration {
        min(.seconds(60), max(.seconds(1), retention.age / 10))
    }

    func run() async throws {
        let interval = Self.retentionInterval(for: log.configuration.retention)
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                // A failure is logged by the log itself and tried again next time.
                try? await log.applyRetention()
            }
        }
        await log.close()
    }
}

/// Runs the aggregator continuously; on shutdown it finishes its transaction and saves its cursor.
///
/// A failure to count (SQLite on a full disk, an I/O error) is logged and tried again after a
/// pause that doubles up to ``maximumRetryDelay``, from the last event counted: counting resumes
/// by itself once the disk recovers. The service must not return before shutdown, because a
/// service that returns stops the whole server, and with it the intake.
struct AggregatorService: Service {
    let aggregator: Aggregator
    let logger: Logger
    /// The pause after a first failure.
    var retryDelay: Duration = .seconds(1)
    /// The longest pause between attempts.
    var maximumRetryDelay: Duration = .seconds(10)

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var delay = retryDelay
            while !Task.isCancelled {
                let started = ContinuousClock.now
                do {
                    try await aggregator.run()
                    return
                } catch {
                    // A run that went well for a while before it failed starts the pauses afresh.
                    if ContinuousClock.now - started > maximumRetryDelay { delay = retryDelay }
                    logger.error(
                        "the aggregator failed; it tries again from the last counted event",
                        metadata: ["error": "\(error)", "retry-in": "\(delay)"])
                    try await Task.sleep(for: delay)
                    delay = min(delay * 2, maximumRetryDelay)
                }
            }
        }
        await aggregator.close()
        let next = await aggregator.nextSequence
        logger.notice("aggregator stopped; counts saved", metadata: ["next-sequence": "\(next)"])
    }
}

/// Runs the uploader continuously; on shutdown it stops sending and saves its positions.
struct UploaderService: Service {
    let uploader: Uploader
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await uploader.run(until: nil) }
        } catch is CancellationError {
        } catch {
            logger.error("the uploader stopped; forwarding resumes after a restart", metadata: ["error": "\(error)"])
        }
        var positions: Logger.Metadata = [:]
        for (kind, lane) in await uploader.statistics() { positions["\(kind)-position"] = "\(lane.position)" }
        logger.notice("uploader stopped; positions saved", metadata: positions)
    }
}

/// Hands the log to a central relay (`serve --upstream-relay`) until the server stops, on a
/// background event loop of its own, then saves the position.
struct RelayUpstreamService: Service {
    let lane: RelayUpstreamLane
    let transport: HTTPClientTransport
    let upstream: UpstreamEventLoop
    let logger: Logger

    init(log: WriteAheadLog, central: CampaignHost, token: String, configuration: UploadConfiguration, logger: Logger) throws(UpstreamTLS.Failure) {
        let upstream = UpstreamEventLoop(priority: configuration.threadPriority)
        do {
            transport = try HTTPClientTransport(
                connectionsPerHost: 1, retryStatuses: configuration.retryStatuses, maximumRedirects: 0,
                caFile: configuration.trustedCertificateAuthorities, clientCertificate: configuration.clientCertificate,
                eventLoopGroup: upstream.group)
        } catch {
            Task { await upstream.shutdown() }
            throw error
        }
        self.upstream = upstream
        self.lane = RelayUpstreamLane(log: log, central: central, token: token, transport: transport, configuration: configuration, logger: logger)
        self.logger = logger
    }

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await lane.run(until: nil) }
        } catch is CancellationError {
        } catch {
            logger.error("the relay lane stopped; handing on resumes after a restart", metadata: ["error": "\(error)"])
        }
        await transport.shutdown()
        await upstream.shutdown()
        let position = await lane.stats.position
        logger.notice("relay lane stopped; position saved", metadata: ["relay-position": "\(position)"])
    }
}

/// Copies the uploader's, aggregator's and process's state into the metrics once a second.
struct MetricsSampler: Service {
    let metrics: RelayMetrics
    /// The status page's rates, sampled with the metrics.
    let history: StatusHistory
    let log: WriteAheadLog
    let uploader: Uploader?
    let relayLane: RelayUpstreamLane?
    let fleet: FleetStatus?
    let aggregator: Aggregator?
    let store: ForwardingStore

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let durable = await log.durableSequence
                metrics.lastDurableSequence.set(Int64(durable) - 1)
                if let aggregator { metrics.aggregatorLag.set(Int64(durable) - Int64(await aggregator.nextSequence)) }
                if let fleet { metrics.postgresLag.set(Int64(durable) - Int64(fleet.current.nextSequence ?? 1)) }
                var delivered: [String: Int] = [:]
                if let uploader {
                    let lanes = await uploader.statistics()
                    metrics.record(lanes: lanes)
                    for (kind, lane) in lanes { delivered[kind.rawValue] = lane.delivered }
                }
                history.record(durable: durable, delivered: delivered)
                if let relayLane { metrics.record(upstream: await relayLane.state()) }
                metrics.deadLetters.set(Int64((try? await store.pendingDeadLetterCount()) ?? 0))
                await metrics.process.sample()
                try await Task.sleep(for: .seconds(1))
            }
        }
    }
}

/// The first to hear of a shutdown: from then on, new events are answered 503 + Retry-After.
/// It returns (letting the listener close) only after `delay`, so that a load balancer that
/// polls `/readyz` stops sending here before connections are refused. systemd hears `STOPPING=1`
/// at the same moment.
struct ShutdownNotifier: Service {
    let ingestor: EventIngestor
    let delay: Duration
    let systemd: SystemdNotifier
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        ingestor.beginShutdown()
        systemd.notify("STOPPING=1\nSTATUS=shutting down: refusing new events, saving positions", telling: "the relay is stopping", logger: logger)
        logger.notice(
            "shutting down: refusing new events, finishing requests under way, then saving positions and closing the log",
            metadata: delay > .zero ? ["listener-closes-in": "\(delay)"] : [:]
        )
        if delay > .zero {
            // The group waits for this service before it stops the listener: sleeping here is the delay.
            try? await Task.sleep(for: delay)
            logger.notice("shutdown delay over: closing the listener")
        }
    }
}

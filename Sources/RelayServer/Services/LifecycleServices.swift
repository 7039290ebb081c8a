import CampaignProtocol
import Logging
import RelayAggregator
import RelayForwarding
import RelayLog
import ServiceLifecycle

/// Closes the log once everything that writes or reads it has stopped (it is shut down last).
struct LogService: Service {
    let log: WriteAheadLog

    func run() async throws {
        try? await gracefulShutdown()
        await log.close()
    }
}

/// Runs the aggregator continuously; on shutdown it finishes its transaction and saves its cursor.
struct AggregatorService: Service {
    let aggregator: Aggregator
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await aggregator.run() }
        } catch is CancellationError {
        } catch {
            logger.error("the aggregator stopped; counts will catch up after a restart", metadata: ["error": "\(error)"])
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
                if let uploader {
                    let lanes = await uploader.statistics()
                    metrics.uploadBacklogTracking.set(Int64(lanes[.tracking]?.backlog ?? 0))
                    metrics.uploadBacklogMarketing.set(Int64(lanes[.marketing]?.backlog ?? 0))
                    metrics.recordUploadTotals(
                        retries: lanes.values.reduce(0) { $0 + $1.retries }, delivered: lanes.values.reduce(0) { $0 + $1.delivered })
                }
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
/// polls `/readyz` stops sending here before connections are refused.
struct ShutdownNotifier: Service {
    let ingestor: EventIngestor
    let delay: Duration
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        ingestor.beginShutdown()
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

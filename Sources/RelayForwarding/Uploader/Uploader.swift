public import CampaignProtocol
public import Logging
public import RelayLog

/// The uploader: one ``UploadLane`` per configured host, working side by side, each with its own
/// durable cursor (so a missing or failing marketing host never holds tracking hits back).
public actor Uploader {
    /// The lanes, tracking first.
    public let lanes: [UploadLane]
    let transport: HTTPClientTransport
    let pipelines: [TrackingHitPipeline]
    /// The thread the connections to Campaign run on, apart from request handling.
    let upstream: UpstreamEventLoop

    /// An uploader for the open `log`, sending to whichever hosts are given from the lanes'
    /// durable cursors, and skipping registrations unchanged since their last delivery. Each lane
    /// records through `metrics(kind)` (none by default).
    ///
    /// - Throws: ``UpstreamTLS/Failure`` when the configured CA file cannot be used.
    public init(
        log: WriteAheadLog, trackingHost: CampaignHost?, marketingHost: CampaignHost?, store: ForwardingStore,
        configuration: UploadConfiguration, logger: Logger, metrics: (UploadLane.Kind) -> LaneMetrics = { _ in .none }
    ) throws(UpstreamTLS.Failure) {
        try self.init(
            source: .cursor(log), trackingHost: trackingHost, marketingHost: marketingHost, store: store, configuration: configuration,
            deduplicates: true, logger: logger, metrics: metrics
        )
    }

    /// An uploader whose lanes read `source`: the open log from their cursors, or a range of a
    /// log for a replay (which resends everything: `deduplicates` false). Either way, tracking
    /// hits go through the pipeline while the host is healthy. Each lane records through
    /// `metrics(kind)` (none by default).
    ///
    /// - Throws: ``UpstreamTLS/Failure`` when the configured CA file cannot be used.
    public init(
        source: UploadLane.Source, trackingHost: CampaignHost?, marketingHost: CampaignHost?, store: ForwardingStore,
        configuration: UploadConfiguration, deduplicates: Bool, logger: Logger, metrics: (UploadLane.Kind) -> LaneMetrics = { _ in .none }
    ) throws(UpstreamTLS.Failure) {
        // Checked before the event loop starts, so a bad CA file leaves no thread behind.
        let tls = try UpstreamTLS.clientConfiguration(trusting: configuration.trustedCertificateAuthorities)
        let upstream = UpstreamEventLoop(priority: configuration.threadPriority)
        // One TLS set-up for both clients of the hosts: the pipeline's and the transport's.
        let transport = HTTPClientTransport(
            connectionsPerHost: configuration.concurrency, retryStatuses: configuration.retryStatuses,
            maximumRedirects: configuration.maximumRedirects, tls: tls, eventLoopGroup: upstream.group
        )
        var lanes: [UploadLane] = []
        var pipelines: [TrackingHitPipeline?] = []
        if let trackingHost {
            let pipeline: TrackingHitPipeline?
            do {
                pipeline = try TrackingHitPipeline(
                    host: trackingHost, connections: configuration.concurrency, timeout: configuration.requestTimeout,
                    retryStatuses: configuration.retryStatuses, tls: tls, eventLoop: upstream.group.next()
                )
            } catch {
                logger.warning("tracking hits go one request at a time: TLS setup failed", metadata: ["error": "\(error)"])
                pipeline = nil
            }
            lanes.append(
                UploadLane(
                    sink: TrackingHostSink(host: trackingHost), transport: transport, store: store, source: source,
                    configuration: configuration, deduplicates: deduplicates, logger: logger, pipeline: pipeline, metrics: metrics(.tracking)
                )
            )
            pipelines.append(pipeline)
        }
        if let marketingHost {
            // Registrations of one token go one at a time, in order (the lane keeps that), which
            // keeps "skip if unchanged since the last delivery" exact.
            lanes.append(
                UploadLane(
                    sink: MarketingHostSink(host: marketingHost), transport: transport, store: store, source: source,
                    configuration: configuration, deduplicates: deduplicates, logger: logger, metrics: metrics(.marketing)
                )
            )
        }
        self.lanes = lanes
        self.transport = transport
        self.pipelines = pipelines.compactMap { $0 }
        self.upstream = upstream
    }

    /// Runs every lane until each has done every event below `target` (`nil`: follow the log until
    /// cancelled), then closes the connections.
    public func run(until target: UInt64?) async throws(LogError) {
        let result: Result<Void, LogError> = await withTaskGroup(of: Result<Void, LogError>.self) { group in
            for lane in lanes {
                group.addTask {
                    do throws(LogError) {
                        try await lane.run(until: target)
                        return .success(())
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var first: Result<Void, LogError> = .success(())
            for await outcome in group {
                if case .failure = outcome, case .success = first { first = outcome }
            }
            return first
        }
        await transport.shutdown()
        for pipeline in pipelines { await pipeline.shutdown() }
        await upstream.shutdown()
        try result.get()
    }

    /// Each lane's statistics, by lane kind.
    public func statistics() async -> [UploadLane.Kind: LaneStatistics] {
        var result: [UploadLane.Kind: LaneStatistics] = [:]
        for lane in lanes {
            if let kind = lane.kind { result[kind] = await lane.stats }
        }
        return result
    }
}

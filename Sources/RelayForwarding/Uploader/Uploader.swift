public import CampaignProtocol
public import Logging
import NIOSSL
public import RelayCore
public import RelayLog

/// The uploader: one ``UploadLane`` per configured destination (the Campaign tracking host, the
/// marketing host, a central relay), working side by side, each with its own durable cursor (so a
/// missing or failing destination never holds another back).
///
/// This is the one place the lanes are assembled: each destination is a sink
/// (``TrackingHostSink``, ``MarketingHostSink``, ``CentralRelaySink``), and each upstream gets one
/// TLS set-up: the Campaign hosts share one (the tracking host's pipeline and the client that
/// sends registrations, redirected hits and retries use the same configuration); a central relay
/// has its own, with the client certificate it may ask for.
public actor Uploader {
    /// The lanes: the default tenant's tracking and marketing, each tenant's, then the central
    /// relay, as configured.
    public nonisolated let lanes: [UploadLane]
    let transports: [HTTPClientTransport]
    let pipelines: [TrackingHitPipeline]
    /// The thread the connections upstream run on, apart from request handling.
    let upstream: UpstreamEventLoop

    /// An uploader for the open `log`, sending to whichever destinations are given from the lanes'
    /// durable cursors, and skipping registrations unchanged since their last delivery: the
    /// default tenant's Campaign hosts, each of `tenants`' own hosts, and a central relay. Each lane
    /// records through `metrics(kind, tenant)` (none by default; `kind` is `tracking`, `marketing`
    /// or `relay`); the log was opened with every lane's consumer (``UploadLane/Kind/consumer``,
    /// ``TenantDestinations/consumers``, ``CentralRelaySink/consumer``).
    ///
    /// - Throws: ``UpstreamTLS/Failure`` when a configured CA file or client certificate cannot be used.
    public init(
        log: WriteAheadLog, trackingHost: CampaignHost?, marketingHost: CampaignHost?, tenants: [TenantDestinations] = [],
        upstreamRelay: CentralRelaySink? = nil, store: ForwardingStore, configuration: UploadConfiguration, logger: Logger,
        metrics: (String, TenantName?) -> LaneMetrics = { _, _ in .none }
    ) throws(UpstreamTLS.Failure) {
        try self.init(
            source: .cursor(log), trackingHost: trackingHost, marketingHost: marketingHost, tenants: tenants, upstreamRelay: upstreamRelay,
            store: store, configuration: configuration, deduplicates: true, logger: logger, metrics: metrics
        )
    }

    /// An uploader whose Campaign lanes read `source`: the open log from their cursors, or a range
    /// of a log for a replay (which resends everything: `deduplicates` false). Either way, tracking
    /// hits go through the pipeline while the host is healthy. Each lane records through
    /// `metrics(kind, tenant)` (none by default). It forwards the default tenant's events only.
    ///
    /// - Throws: ``UpstreamTLS/Failure`` when the configured CA file cannot be used.
    public init(
        source: UploadLane.Source, trackingHost: CampaignHost?, marketingHost: CampaignHost?, store: ForwardingStore,
        configuration: UploadConfiguration, deduplicates: Bool, logger: Logger, metrics: (String, TenantName?) -> LaneMetrics = { _, _ in .none }
    ) throws(UpstreamTLS.Failure) {
        try self.init(
            source: source, trackingHost: trackingHost, marketingHost: marketingHost, tenants: [], upstreamRelay: nil, store: store,
            configuration: configuration, deduplicates: deduplicates, logger: logger, metrics: metrics)
    }

    private init(
        source: UploadLane.Source, trackingHost: CampaignHost?, marketingHost: CampaignHost?, tenants: [TenantDestinations],
        upstreamRelay: CentralRelaySink?, store: ForwardingStore, configuration: UploadConfiguration, deduplicates: Bool, logger: Logger,
        metrics: (String, TenantName?) -> LaneMetrics
    ) throws(UpstreamTLS.Failure) {
        // Checked before the event loop starts, so a bad CA file or certificate leaves no thread
        // behind: the default tenant's, then each tenant's that names its own.
        let defaultTLS = try UpstreamTLS.clientConfiguration(trusting: configuration.trustedCertificateAuthorities)
        let groups = [TenantDestinations?.none] + tenants.map { Optional($0) }
        var tlsByGroup: [TLSConfiguration] = []
        for group in groups {
            guard let caFile = group?.trustedCertificateAuthorities else {
                tlsByGroup.append(defaultTLS)
                continue
            }
            do {
                tlsByGroup.append(try UpstreamTLS.clientConfiguration(trusting: caFile))
            } catch {
                throw UpstreamTLS.Failure(description: "[tenant.\(group?.tenant.text ?? "")] ca-file: \(error.description)")
            }
        }
        let relayTLS = try upstreamRelay.map { _ throws(UpstreamTLS.Failure) in
            try UpstreamTLS.clientConfiguration(trusting: configuration.trustedCertificateAuthorities, presenting: configuration.clientCertificate)
        }
        let upstream = UpstreamEventLoop(priority: configuration.threadPriority)
        var lanes: [UploadLane] = []
        var pipelines: [TrackingHitPipeline?] = []
        var transports: [HTTPClientTransport] = []
        for (group, tls) in zip(groups, tlsByGroup) {
            let tenant = group?.tenant
            let trackingHost = group.map(\.trackingHost) ?? trackingHost
            let marketingHost = group.map(\.marketingHost) ?? marketingHost
            guard trackingHost != nil || marketingHost != nil else { continue }
            // One TLS set-up and one client for a tenant's two hosts: the pipeline's and this one.
            // Tenants share none, so one tenant's slow host never holds another's connections.
            let transport = HTTPClientTransport(
                connectionsPerHost: configuration.concurrency, retryStatuses: configuration.retryStatuses,
                maximumRedirects: configuration.maximumRedirects, tls: tls, eventLoopGroup: upstream.group
            )
            transports.append(transport)
            if let trackingHost {
                let pipeline: TrackingHitPipeline?
                do {
                    pipeline = try TrackingHitPipeline(
                        host: trackingHost, connections: configuration.concurrency, timeout: configuration.requestTimeout,
                        retryStatuses: configuration.retryStatuses, tls: tls, eventLoop: upstream.group.next()
                    )
                } catch {
                    logger.warning(
                        "tracking hits go one request at a time: TLS setup failed",
                        metadata: ["error": "\(error)", "tenant": "\(tenant.displayName)"])
                    pipeline = nil
                }
                lanes.append(
                    UploadLane(
                        sink: TrackingHostSink(host: trackingHost, tenant: tenant), transport: transport, store: store, source: source,
                        configuration: configuration, deduplicates: deduplicates, logger: logger, pipeline: pipeline,
                        metrics: metrics(UploadLane.Kind.tracking.rawValue, tenant)
                    )
                )
                pipelines.append(pipeline)
            }
            if let marketingHost {
                // Registrations of one token go one at a time, in order (the lane keeps that), which
                // keeps "skip if unchanged since the last delivery" exact.
                lanes.append(
                    UploadLane(
                        sink: MarketingHostSink(host: marketingHost, tenant: tenant), transport: transport, store: store, source: source,
                        configuration: configuration, deduplicates: deduplicates, logger: logger,
                        metrics: metrics(UploadLane.Kind.marketing.rawValue, tenant)
                    )
                )
            }
        }
        if let upstreamRelay, let relayTLS, case .cursor(let log) = source {
            // One batch at a time, in order: one connection; a redirection is refused, not followed.
            let transport = HTTPClientTransport(
                connectionsPerHost: 1, retryStatuses: configuration.retryStatuses, maximumRedirects: 0, tls: relayTLS,
                eventLoopGroup: upstream.group)
            transports.append(transport)
            lanes.append(
                UploadLane(
                    sink: upstreamRelay, log: log, transport: transport, configuration: configuration, logger: logger,
                    metrics: metrics(upstreamRelay.name, nil)))
        }
        self.lanes = lanes
        self.transports = transports
        self.pipelines = pipelines.compactMap { $0 }
        self.upstream = upstream
    }

    /// The lane named `name` (`tracking`, `marketing`, `relay`), if the uploader has it.
    public nonisolated func lane(named name: String) -> UploadLane? {
        lanes.first { $0.name == name }
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
        for transport in transports { await transport.shutdown() }
        for pipeline in pipelines { await pipeline.shutdown() }
        await upstream.shutdown()
        try result.get()
    }

    /// Each lane's statistics, by lane name.
    public func statisticsByLane() async -> [String: LaneStatistics] {
        var result: [String: LaneStatistics] = [:]
        for lane in lanes { result[lane.name] = await lane.stats }
        return result
    }

    /// The Campaign lanes' statistics, by lane kind.
    public func statistics() async -> [UploadLane.Kind: LaneStatistics] {
        var result: [UploadLane.Kind: LaneStatistics] = [:]
        for lane in lanes {
            if let kind = lane.kind { result[kind] = await lane.stats }
        }
        return result
    }
}

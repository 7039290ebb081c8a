public import CampaignProtocol
public import Logging
import NIOConcurrencyHelpers
import NIOSSL
public import RelayCore
public import RelayLog

/// The uploader: one ``UploadLane`` per configured destination (the default tenant's Campaign
/// tracking and marketing hosts, each tenant's, a central relay), working side by side, each with
/// its own durable cursor (so a missing or failing destination never holds another back).
///
/// This is the one place the lanes are assembled: each destination is a sink
/// (``TrackingHostSink``, ``MarketingHostSink``, ``CentralRelaySink``), and each upstream gets one
/// TLS set-up: a tenant's Campaign hosts (the default tenant's included) share one (the tracking
/// host's pipeline and the client that sends registrations, redirected hits and retries use the
/// same configuration), and no two tenants share one; a central relay has its own, with the client
/// certificate it may ask for.
///
/// The tenants' lanes can change while it runs (``apply(_:)``, a reload of the configuration): a
/// tenant's lanes stop with their cursors saved, and new ones start from their cursors.
public actor Uploader {
    /// The lanes that never change while it runs: the default tenant's and the central relay's.
    let fixedLanes: [UploadLane]
    let transports: [HTTPClientTransport]
    let pipelines: [TrackingHitPipeline]
    /// The thread the connections upstream run on, apart from request handling.
    let upstream: UpstreamEventLoop
    /// Each tenant's lanes, their connections and, while running, their tasks.
    private var tenantLanes: [TenantName: TenantLanes] = [:]
    /// Every lane, readable from anywhere: the fixed ones, then the tenants', by name.
    private let allLanes: NIOLockedValueBox<[UploadLane]>
    /// What new tenant lanes are made with.
    private let factory: LaneFactory
    /// Whether ``run(until:)`` is under way (a tenant added now starts at once).
    private var running = false

    /// One tenant's lanes and what they send through.
    private struct TenantLanes {
        var destinations: TenantDestinations
        var lanes: [UploadLane]
        var transport: HTTPClientTransport
        var pipeline: TrackingHitPipeline?
        /// Each lane's run; a lane that fails ends with its error (logged as it happens).
        var tasks: [Task<Result<Void, LogError>, Never>] = []
    }

    /// What every lane of a Campaign host is made with.
    private struct LaneFactory: Sendable {
        let source: UploadLane.Source
        let store: ForwardingStore
        let configuration: UploadConfiguration
        let deduplicates: Bool
        let logger: Logger
        let metrics: @Sendable (String, TenantName?) -> LaneMetrics
        let upstream: UpstreamEventLoop

        /// The lanes of a tenant's (or the default tenant's) hosts over one client, with `tls`.
        func lanes(tenant: TenantName?, trackingHost: CampaignHost?, marketingHost: CampaignHost?, tls: TLSConfiguration) -> (
            lanes: [UploadLane], transport: HTTPClientTransport, pipeline: TrackingHitPipeline?
        ) {
            // One TLS set-up and one client for a tenant's two hosts: the pipeline's and this one.
            // Tenants share none, so one tenant's slow host never holds another's connections.
            let transport = HTTPClientTransport(
                connectionsPerHost: configuration.concurrency, retryStatuses: configuration.retryStatuses,
                maximumRedirects: configuration.maximumRedirects, tls: tls, eventLoopGroup: upstream.group
            )
            var lanes: [UploadLane] = []
            var pipeline: TrackingHitPipeline?
            if let trackingHost {
                do {
                    pipeline = try TrackingHitPipeline(
                        host: trackingHost, connections: configuration.concurrency, timeout: configuration.requestTimeout,
                        retryStatuses: configuration.retryStatuses, tls: tls, eventLoop: upstream.group.next()
                    )
                } catch {
                    logger.warning(
                        "tracking hits go one request at a time: TLS setup failed",
                        metadata: ["error": "\(error)", "tenant": "\(tenant.displayName)"])
                }
                lanes.append(
                    UploadLane(
                        sink: TrackingHostSink(host: trackingHost, tenant: tenant), transport: transport, store: store, source: source,
                        configuration: configuration, deduplicates: deduplicates, logger: logger, pipeline: pipeline,
                        metrics: metrics(UploadLane.Kind.tracking.rawValue, tenant)))
            }
            if let marketingHost {
                // Registrations of one token go one at a time, in order (the lane keeps that), which
                // keeps "skip if unchanged since the last delivery" exact.
                lanes.append(
                    UploadLane(
                        sink: MarketingHostSink(host: marketingHost, tenant: tenant), transport: transport, store: store, source: source,
                        configuration: configuration, deduplicates: deduplicates, logger: logger,
                        metrics: metrics(UploadLane.Kind.marketing.rawValue, tenant)))
            }
            return (lanes, transport, pipeline)
        }

        /// The TLS set-up of a tenant's hosts: its own CA file, or the relay's.
        func tls(for destinations: TenantDestinations, default defaultTLS: TLSConfiguration) throws(UpstreamTLS.Failure) -> TLSConfiguration {
            guard let caFile = destinations.trustedCertificateAuthorities else { return defaultTLS }
            do {
                return try UpstreamTLS.clientConfiguration(trusting: caFile)
            } catch {
                throw UpstreamTLS.Failure(description: "[tenant.\(destinations.tenant.text)] ca-file: \(error.description)")
            }
        }
    }

    /// The TLS set-up of the default tenant's hosts, which tenants without a CA file of their own share.
    private let defaultTLS: TLSConfiguration

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
        metrics: @escaping @Sendable (String, TenantName?) -> LaneMetrics = { _, _ in .none }
    ) throws(UpstreamTLS.Failure) {
        try self.init(
            source: .cursor(log), trackingHost: trackingHost, marketingHost: marketingHost, tenants: tenants, upstreamRelay: upstreamRelay,
            store: store, configuration: configuration, deduplicates: true, logger: logger, metrics: metrics
        )
    }

    /// An uploader whose Campaign lanes read `source`: the open log from their cursors, or a range
    /// of a log for a replay (which resends everything: `deduplicates` false). Either way, tracking
    /// hits go through the pipeline while the host is healthy. Each lane records through
    /// `metrics(kind, tenant)` (none by default). It forwards the default tenant's events to
    /// `trackingHost` and `marketingHost`, and each of `tenants`' to that tenant's own hosts; the
    /// events of a tenant not in `tenants` are not forwarded.
    ///
    /// - Throws: ``UpstreamTLS/Failure`` when a configured CA file cannot be used.
    public init(
        source: UploadLane.Source, trackingHost: CampaignHost?, marketingHost: CampaignHost?, tenants: [TenantDestinations] = [],
        store: ForwardingStore, configuration: UploadConfiguration, deduplicates: Bool, logger: Logger,
        metrics: @escaping @Sendable (String, TenantName?) -> LaneMetrics = { _, _ in .none }
    ) throws(UpstreamTLS.Failure) {
        try self.init(
            source: source, trackingHost: trackingHost, marketingHost: marketingHost, tenants: tenants, upstreamRelay: nil, store: store,
            configuration: configuration, deduplicates: deduplicates, logger: logger, metrics: metrics)
    }

    private init(
        source: UploadLane.Source, trackingHost: CampaignHost?, marketingHost: CampaignHost?, tenants: [TenantDestinations],
        upstreamRelay: CentralRelaySink?, store: ForwardingStore, configuration: UploadConfiguration, deduplicates: Bool, logger: Logger,
        metrics: @escaping @Sendable (String, TenantName?) -> LaneMetrics
    ) throws(UpstreamTLS.Failure) {
        // Checked before the event loop starts, so a bad CA file or certificate leaves no thread
        // behind: the default tenant's, then each tenant's that names its own.
        let defaultTLS = try UpstreamTLS.clientConfiguration(trusting: configuration.trustedCertificateAuthorities)
        let relayTLS = try upstreamRelay.map { _ throws(UpstreamTLS.Failure) in
            try UpstreamTLS.clientConfiguration(trusting: configuration.trustedCertificateAuthorities, presenting: configuration.clientCertificate)
        }
        let upstream = UpstreamEventLoop(priority: configuration.threadPriority)
        let factory = LaneFactory(
            source: source, store: store, configuration: configuration, deduplicates: deduplicates, logger: logger, metrics: metrics,
            upstream: upstream)
        var tenantTLS: [TLSConfiguration] = []
        do {
            for destinations in tenants { tenantTLS.append(try factory.tls(for: destinations, default: defaultTLS)) }
        } catch {
            Task { await upstream.shutdown() }
            throw error
        }
        var lanes: [UploadLane] = []
        var pipelines: [TrackingHitPipeline] = []
        var transports: [HTTPClientTransport] = []
        if trackingHost != nil || marketingHost != nil {
            let made = factory.lanes(tenant: nil, trackingHost: trackingHost, marketingHost: marketingHost, tls: defaultTLS)
            lanes += made.lanes
            transports.append(made.transport)
            if let pipeline = made.pipeline { pipelines.append(pipeline) }
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
        var tenantLanes: [TenantName: TenantLanes] = [:]
        for (destinations, tls) in zip(tenants, tenantTLS) where destinations.trackingHost != nil || destinations.marketingHost != nil {
            let made = factory.lanes(
                tenant: destinations.tenant, trackingHost: destinations.trackingHost, marketingHost: destinations.marketingHost, tls: tls)
            tenantLanes[destinations.tenant] = TenantLanes(
                destinations: destinations, lanes: made.lanes, transport: made.transport, pipeline: made.pipeline)
        }
        self.fixedLanes = lanes
        self.transports = transports
        self.pipelines = pipelines
        self.upstream = upstream
        self.factory = factory
        self.defaultTLS = defaultTLS
        self.tenantLanes = tenantLanes
        self.allLanes = NIOLockedValueBox(lanes + Self.ordered(tenantLanes))
    }

    /// The tenants' lanes in name order.
    private static func ordered(_ tenantLanes: [TenantName: TenantLanes]) -> [UploadLane] {
        tenantLanes.keys.sorted().flatMap { tenantLanes[$0]?.lanes ?? [] }
    }

    /// Every lane: the default tenant's tracking and marketing, the central relay's, then each
    /// tenant's, as configured now.
    public nonisolated var lanes: [UploadLane] { allLanes.withLockedValue { $0 } }

    /// The lane named `name` (`tracking`, `marketing`, `relay`, `tracking_<tenant>`), if the uploader has it.
    public nonisolated func lane(named name: String) -> UploadLane? {
        lanes.first { $0.name == name }
    }

    /// Runs every lane until each has done every event below `target` (`nil`: follow the log until
    /// cancelled), then closes the connections.
    public func run(until target: UInt64?) async throws(LogError) {
        running = true
        for tenant in tenantLanes.keys { startLanes(of: tenant, until: target) }
        let follows: Bool
        if case .cursor = factory.source, target == nil { follows = true } else { follows = false }
        let result: Result<Void, LogError> = await withTaskGroup(of: Result<Void, LogError>.self) { group in
            for lane in fixedLanes {
                group.addTask { await Self.run(lane, until: target) }
            }
            // Following the log, the uploader runs until cancelled even without lanes of its own:
            // tenants' lanes come and go meanwhile.
            if follows {
                group.addTask {
                    while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                    return .success(())
                }
            }
            var first: Result<Void, LogError> = .success(())
            for await outcome in group {
                if case .failure = outcome, case .success = first { first = outcome }
            }
            return first
        }
        running = false
        var tenantFailure: LogError?
        for tenant in tenantLanes.keys.sorted() {
            // Up to a target, a tenant's lane that failed fails the run, as the fixed lanes do.
            if !follows, let tasks = tenantLanes[tenant]?.tasks {
                for task in tasks {
                    if case .failure(let error) = await task.value, tenantFailure == nil { tenantFailure = error }
                }
            }
            await stopLanes(of: tenant)
        }
        for transport in transports { await transport.shutdown() }
        for pipeline in pipelines { await pipeline.shutdown() }
        await upstream.shutdown()
        try result.get()
        if let tenantFailure { throw tenantFailure }
    }

    private static func run(_ lane: UploadLane, until target: UInt64?) async -> Result<Void, LogError> {
        do throws(LogError) {
            try await lane.run(until: target)
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// Starts the lanes of `tenant`; a lane that fails is logged (the others go on).
    private func startLanes(of tenant: TenantName, until target: UInt64?) {
        guard var set = tenantLanes[tenant], set.tasks.isEmpty else { return }
        let logger = factory.logger
        set.tasks = set.lanes.map { lane in
            Task {
                let outcome = await Self.run(lane, until: target)
                if case .failure(let error) = outcome {
                    logger.error("a tenant's lane stopped", metadata: ["lane": "\(lane.name)", "error": "\(error)"])
                }
                return outcome
            }
        }
        tenantLanes[tenant] = set
    }

    /// Stops the lanes of `tenant` (each saves its cursor) and closes their connections.
    private func stopLanes(of tenant: TenantName) async {
        guard let set = tenantLanes[tenant] else { return }
        for task in set.tasks { task.cancel() }
        for task in set.tasks { _ = await task.value }
        await set.transport.shutdown()
        await set.pipeline?.shutdown()
        tenantLanes[tenant]?.tasks = []
    }

    /// What a change of the tenants did.
    public struct TenantChange: Sendable, Hashable {
        /// Tenants whose lanes started.
        public var added: [TenantName] = []
        /// Tenants whose lanes were stopped and started again with new hosts or CA file.
        public var changed: [TenantName] = []
        /// Tenants whose lanes stopped (their cursors saved).
        public var removed: [TenantName] = []
    }

    /// Brings the tenants' lanes to `tenants` while the uploader runs: a tenant whose hosts or CA
    /// file changed has its lanes stopped (cursors saved) and started again from those cursors; a
    /// tenant that is gone has its lanes stopped; a new one gets lanes from its cursors (declared
    /// by the caller on the log beforehand, ``TenantDestinations/consumers``). Nothing changes when
    /// a CA file cannot be used.
    ///
    /// - Throws: ``UpstreamTLS/Failure`` naming the tenant whose CA file cannot be used.
    public func apply(_ tenants: [TenantDestinations]) async throws(UpstreamTLS.Failure) -> TenantChange {
        let wanted = Dictionary(
            tenants.filter { $0.trackingHost != nil || $0.marketingHost != nil }.map { ($0.tenant, $0) }, uniquingKeysWith: { first, _ in first })
        var tls: [TenantName: TLSConfiguration] = [:]
        for (tenant, destinations) in wanted where tenantLanes[tenant]?.destinations != destinations {
            tls[tenant] = try factory.tls(for: destinations, default: defaultTLS)
        }
        var change = TenantChange()
        for tenant in tenantLanes.keys.sorted() where wanted[tenant] == nil {
            await stopLanes(of: tenant)
            tenantLanes[tenant] = nil
            change.removed.append(tenant)
        }
        for tenant in wanted.keys.sorted() {
            guard let destinations = wanted[tenant], let tls = tls[tenant] else { continue }
            if tenantLanes[tenant] != nil {
                await stopLanes(of: tenant)
                change.changed.append(tenant)
            } else {
                change.added.append(tenant)
            }
            let made = factory.lanes(
                tenant: tenant, trackingHost: destinations.trackingHost, marketingHost: destinations.marketingHost, tls: tls)
            tenantLanes[tenant] = TenantLanes(destinations: destinations, lanes: made.lanes, transport: made.transport, pipeline: made.pipeline)
            if running { startLanes(of: tenant, until: nil) }
        }
        let lanes = fixedLanes + Self.ordered(tenantLanes)
        allLanes.withLockedValue { $0 = lanes }
        return change
    }

    /// Each lane's statistics, by lane name.
    public func statisticsByLane() async -> [String: LaneStatistics] {
        var result: [String: LaneStatistics] = [:]
        for lane in lanes { result[lane.name] = await lane.stats }
        return result
    }

    /// The default tenant's Campaign lanes' statistics, by lane kind.
    public func statistics() async -> [UploadLane.Kind: LaneStatistics] {
        var result: [UploadLane.Kind: LaneStatistics] = [:]
        for lane in lanes where lane.tenant == nil {
            if let kind = lane.kind { result[kind] = await lane.stats }
        }
        return result
    }
}

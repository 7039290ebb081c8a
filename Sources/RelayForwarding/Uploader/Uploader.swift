import CampaignProtocol
public import Logging
import NIOConcurrencyHelpers
import NIOSSL
public import RelayCore
public import RelayLog

/// The uploader: one ``UploadLane`` per sink of the lists configuration builds (``SinkList``: the
/// default tenant's, which holds the sinks of every tenant's events too, and each tenant's),
/// working side by side, each with its own durable cursor (so a missing or failing destination
/// never holds another back).
///
/// This is the one place the lanes are assembled, and it knows no kind of destination: each sink
/// says what it carries and how (``EventSink``, ``BatchSink``). Each list gets one TLS set-up for
/// its event sinks (a tenant's CA file, or the relay's; the pipelines a sink makes and the client
/// that sends its events, redirections and retries use the same one), and no two tenants share
/// one; a batch sink (a central relay) has its own, with the client certificate it may ask for.
///
/// The tenants' lanes can change while it runs (``apply(_:)``, a reload of the configuration): a
/// tenant's lanes stop with their cursors saved, and new ones start from their cursors.
public actor Uploader {
    /// The lanes that never change while it runs: the default tenant's list's.
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
    private let factory: UploaderLaneFactory
    /// Whether ``run(until:)`` is under way (a tenant added now starts at once).
    private var running = false

    /// One tenant's lanes and what they send through.
    private struct TenantLanes {
        var list: SinkList
        var made: UploaderLaneFactory.Made
        /// Each lane's run; a lane that fails ends with its error (logged as it happens).
        var tasks: [Task<Result<Void, LogError>, Never>] = []
    }

    /// The TLS set-up of the default tenant's endpoints, which tenants without a CA file of their own share.
    private let defaultTLS: TLSConfiguration

    /// An uploader for the open `log`, sending to the sinks of `sinks` from the lanes' durable
    /// cursors, and skipping registrations unchanged since their last delivery. Each lane records
    /// through `metrics(sink)` (none by default); the log was opened with every lane's consumer
    /// (``SinkList/consumers``).
    ///
    /// - Throws: ``UpstreamTLS/Failure`` when a configured CA file or client certificate cannot be used.
    public init(
        log: WriteAheadLog, sinks: [SinkList], store: ForwardingStore, configuration: UploadConfiguration, logger: Logger,
        metrics: @escaping @Sendable (any Sink) -> LaneMetrics = { _ in .none }
    ) throws(UpstreamTLS.Failure) {
        try self.init(
            source: .cursor(log), sinks: sinks, store: store, configuration: configuration, deduplicates: true, logger: logger, metrics: metrics)
    }

    /// An uploader whose lanes read `source`: the open log from their cursors, or a range of a log
    /// for a replay (which resends everything: `deduplicates` false, and hands nothing to a batch
    /// sink). Either way, a sink's pipeline carries its events while the host is healthy. Each lane
    /// records through `metrics(sink)` (none by default). The events of a tenant without a list in
    /// `sinks` are not forwarded; a tenant's list with no sink makes no lanes.
    ///
    /// - Throws: ``UpstreamTLS/Failure`` when a configured CA file or client certificate cannot be used.
    public init(
        source: UploadLane.Source, sinks: [SinkList], store: ForwardingStore, configuration: UploadConfiguration, deduplicates: Bool,
        logger: Logger, metrics: @escaping @Sendable (any Sink) -> LaneMetrics = { _ in .none }
    ) throws(UpstreamTLS.Failure) {
        let fixed = sinks.filter { $0.tenant == nil }
        let tenants = sinks.filter { $0.tenant != nil && !$0.sinks.isEmpty }
        // Checked before the event loop starts, so a bad CA file or certificate leaves no thread
        // behind: the default tenant's, then each tenant's that names its own.
        let defaultTLS = try UpstreamTLS.clientConfiguration(trusting: configuration.trustedCertificateAuthorities)
        let handsOn = fixed.allSinks.contains { $0 is any BatchSink }
        let batchTLS =
            try handsOn
            ? UpstreamTLS.clientConfiguration(
                trusting: configuration.trustedCertificateAuthorities, presenting: configuration.clientCertificate) : nil
        let upstream = UpstreamEventLoop(priority: configuration.threadPriority)
        let factory = UploaderLaneFactory(
            source: source, store: store, configuration: configuration, deduplicates: deduplicates, logger: logger, metrics: metrics,
            upstream: upstream)
        var tenantTLS: [TLSConfiguration] = []
        do {
            for list in tenants { tenantTLS.append(try factory.tls(for: list, default: defaultTLS)) }
        } catch {
            Task { await upstream.shutdown() }
            throw error
        }
        var fixedMade = UploaderLaneFactory.Made()
        for list in fixed {
            let made = factory.lanes(of: list, tls: defaultTLS, batchTLS: batchTLS)
            fixedMade.lanes += made.lanes
            fixedMade.transports += made.transports
            fixedMade.pipelines += made.pipelines
        }
        var tenantLanes: [TenantName: TenantLanes] = [:]
        for (list, tls) in zip(tenants, tenantTLS) {
            guard let tenant = list.tenant else { continue }
            tenantLanes[tenant] = TenantLanes(list: list, made: factory.lanes(of: list, tls: tls, batchTLS: nil))
        }
        self.fixedLanes = fixedMade.lanes
        self.transports = fixedMade.transports
        self.pipelines = fixedMade.pipelines
        self.upstream = upstream
        self.factory = factory
        self.defaultTLS = defaultTLS
        self.tenantLanes = tenantLanes
        self.allLanes = NIOLockedValueBox(fixedMade.lanes + Self.ordered(tenantLanes))
    }

    /// The tenants' lanes in name order.
    private static func ordered(_ tenantLanes: [TenantName: TenantLanes]) -> [UploadLane] {
        tenantLanes.keys.sorted().flatMap { tenantLanes[$0]?.made.lanes ?? [] }
    }

    /// Every lane: the default tenant's list's, then each tenant's in name order, each list's in
    /// its order, as configured now.
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
        set.tasks = set.made.lanes.map { lane in
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
        for transport in set.made.transports { await transport.shutdown() }
        for pipeline in set.made.pipelines { await pipeline.shutdown() }
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

    /// Brings the tenants' lanes to `tenants`' lists while the uploader runs: a tenant whose list
    /// changed (its sinks or CA file) has its lanes stopped (cursors saved) and started again from
    /// those cursors; a tenant that is gone, or whose list is empty, has its lanes stopped; a new
    /// one gets lanes from its cursors (declared by the caller on the log beforehand,
    /// ``SinkList/consumers``). A list without a tenant is not the tenants' and is passed over.
    /// Nothing changes when a CA file cannot be used.
    ///
    /// - Throws: ``UpstreamTLS/Failure`` naming the tenant whose CA file cannot be used.
    public func apply(_ tenants: [SinkList]) async throws(UpstreamTLS.Failure) -> TenantChange {
        let wanted = Dictionary(
            tenants.compactMap { list in list.tenant.flatMap { list.sinks.isEmpty ? nil : ($0, list) } }, uniquingKeysWith: { first, _ in first })
        var tls: [TenantName: TLSConfiguration] = [:]
        for (tenant, list) in wanted where tenantLanes[tenant].map({ !$0.list.isSame(as: list) }) ?? true {
            tls[tenant] = try factory.tls(for: list, default: defaultTLS)
        }
        var change = TenantChange()
        for tenant in tenantLanes.keys.sorted() where wanted[tenant] == nil {
            await stopLanes(of: tenant)
            tenantLanes[tenant] = nil
            change.removed.append(tenant)
        }
        for tenant in wanted.keys.sorted() {
            guard let list = wanted[tenant], let tls = tls[tenant] else { continue }
            if tenantLanes[tenant] != nil {
                await stopLanes(of: tenant)
                change.changed.append(tenant)
            } else {
                change.added.append(tenant)
            }
            tenantLanes[tenant] = TenantLanes(list: list, made: factory.lanes(of: list, tls: tls, batchTLS: nil))
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

    /// The statistics of the default tenant's lanes named after a Campaign host's kind (`tracking`,
    /// `marketing`), by that kind.
    public func statistics() async -> [UploadLane.Kind: LaneStatistics] {
        var result: [UploadLane.Kind: LaneStatistics] = [:]
        for lane in lanes where lane.tenant == nil {
            if let kind = UploadLane.Kind(rawValue: lane.name) { result[kind] = await lane.stats }
        }
        return result
    }
}

import Logging
import RelayAggregator
import RelayCore
import RelayForwarding
import RelayIO
import RelayLog
import RelayPostgres
import RelayPrivacy
import ServiceLifecycle

/// What `serve` is made of, assembled from its configuration: the log, the stores, the log's
/// consumers (aggregator, uploader and its lanes, fleet counts), the ingestor and the metrics.
///
/// ``RelayServer`` declares the routes (``routeGroups(_:)``) and the services
/// (``services(application:shutdownNotifier:certificates:)``) from these parts, as data; this is
/// the one place a part is built, and the one place the log is closed when a part cannot be.
struct ServerComponents {
    let configuration: RelayServerConfiguration
    let log: WriteAheadLog
    let metrics: RelayMetrics
    let history: StatusHistory
    let store: ForwardingStore
    let idempotency: IdempotencyStore
    /// `nil` with `--no-aggregates`, or when the aggregates database could not be opened (logged).
    let aggregator: Aggregator?
    /// The lanes to every sink of the configuration's lists; `nil` without a sink (and no tenants to reload).
    let uploader: Uploader?
    /// The lane that hands every event on (to the central relay); `nil` without `--upstream-relay`.
    var relayLane: UploadLane? { uploader?.lanes.first { $0.kind.role == .handsOn } }
    /// `nil` without `--postgres-url`.
    let fleet: (location: PostgresLocation, status: FleetStatus)?
    let ingestor: EventIngestor
    /// The tenants requests are served as, by their path's first segment.
    let tenants: TenantDirectory
    /// Erases a person's registrations (`POST /v1/privacy/erasures`).
    let erasure: PersonalDataErasure
    /// The leases of this relay's stream and the streams it adopted (the log in PostgreSQL).
    let leases: (leases: StreamLeases, adoptions: AdoptedStreams)?
    /// How many copies an acknowledgement means.
    let durability: LogDurability
    let logger: Logger

    /// Opens the log with every consumer `configuration` declares, then builds the parts around
    /// it. When a part cannot be built, the log is closed before the error is thrown.
    ///
    /// - Throws: the log's ``LogError``, the stores' errors, ``UpstreamTLS/Failure`` for an
    ///   unusable CA file.
    static func assemble(configuration: RelayServerConfiguration, fileSystem: any FileSystem, logger: Logger) async throws -> ServerComponents {
        let opened = try await ServerLog.open(configuration: configuration, fileSystem: fileSystem, logger: logger)
        do {
            return try await assemble(around: opened, configuration: configuration, fileSystem: fileSystem, logger: logger)
        } catch {
            await opened.log.close()
            throw error
        }
    }

    private static func assemble(
        around opened: ServerLog, configuration: RelayServerConfiguration, fileSystem: any FileSystem, logger: Logger
    ) async throws -> ServerComponents {
        let log = opened.log
        StartupSummary.log(configuration, to: logger)
        let metrics = RelayMetrics(version: RelayVersion.current, sinkKinds: configuration.sinkKinds)
        let history = StatusHistory()
        await log.observeCommits { commit in
            metrics.record(commit)
            history.recordSync(commit.synchronizeDuration)
        }
        await log.observeSegmentRemovals { removals in metrics.record(removals) }
        // On the log in PostgreSQL, dead letters are kept beside it, under this relay's stream: a
        // lost disk loses none.
        let deadLetterTable = configuration.logPostgres.flatMap { settings in
            opened.leases.map { PostgresDeadLetters(location: settings.location, stream: $0.stream, fence: $0.fence) }
        }
        let store = try await ForwardingStore(
            dataDirectory: configuration.dataDirectory, keys: configuration.log.encryption, table: deadLetterTable)
        // On the log in PostgreSQL, the Idempotency-Keys are kept beside it too, under this
        // relay's stream: a lost disk loses none.
        let idempotencyTable = configuration.logPostgres.flatMap { settings in
            opened.leases.map { PostgresIdempotencyKeys(location: settings.location, stream: $0.stream) }
        }
        let idempotency = try await IdempotencyStore(
            dataDirectory: configuration.dataDirectory, window: configuration.idempotencyWindow, table: idempotencyTable)
        // Counting and forwarding yield a busy core to request handling.
        var upload = configuration.upload
        upload.threadPriority = .background
        // On the log in PostgreSQL, lanes send only while this relay holds its stream's lease.
        upload.forwardingPermit = opened.leases.map { ForwardingPermitReference($0.fence.permit(for: $0.stream)) }
        var aggregator: Aggregator?
        if configuration.aggregates {
            do {
                aggregator = try await Aggregator(
                    log: log, dataDirectory: configuration.dataDirectory, batchSize: configuration.aggregatorBatchSize, priority: .background,
                    pageCacheBytes: configuration.aggregatorPageCacheBytes, metrics: configuration.aggregateMetrics, logger: logger)
            } catch {
                logger.error("aggregates are off until this is fixed; events are still stored and forwarded", metadata: ["error": "\(error)"])
            }
        }
        var uploader: Uploader?
        let sinkLists = configuration.sinkLists
        // With a file to reload, an uploader runs even without sinks yet: a tenant added on SIGHUP
        // gets its lanes there.
        if !sinkLists.allSinks.isEmpty || configuration.reloadTenants != nil {
            uploader = try Uploader(
                log: log, sinks: sinkLists, store: store, configuration: upload, logger: logger, metrics: { metrics.laneMetrics(for: $0) })
        }
        // The fleet's PostgreSQL: its own consumer of the log, with its position in the database.
        let fleet = configuration.postgres.map { (location: $0, status: FleetStatus()) }
        let archives = configuration.log.archiveDirectory.map { [$0] } ?? []
        // On the log in PostgreSQL, an erasure rewrites this relay's stream's rows, under its lease.
        let logStream = configuration.logPostgres.flatMap { settings in
            opened.leases.map { PostgresLogErasure(stream: $0.stream, location: settings.location, fence: $0.fence) }
        }
        // An erasure a stop cut short is finished before anything reads the log or serves (no
        // counter runs yet: the fleet's counts are changed in a session of its own). Should that
        // fail (PostgreSQL down), its registrations stay masked and the next erase finishes it.
        do {
            _ = try await PersonalDataErasure(
                log: log, dataDirectory: configuration.dataDirectory, archiveDirectories: archives, stream: logStream, store: store,
                aggregator: aggregator,
                fleet: fleet.map {
                    PersonalDataErasure.directFleetStep(
                        location: $0.location, relayID: log.identity.relayID, table: configuration.aggregateMetrics, logger: logger)
                },
                fileSystem: fileSystem, sinkKinds: configuration.sinkKinds, metrics: configuration.aggregateMetrics, logger: logger
            ).finishPending()
        } catch {
            logger.error(
                "an unfinished erasure cannot be finished now; its registrations stay masked, and the next erase finishes it",
                metadata: ["error": "\(error)"])
        }
        let erasure = PersonalDataErasure(
            log: log, dataDirectory: configuration.dataDirectory, archiveDirectories: archives, stream: logStream, store: store,
            aggregator: aggregator,
            fleet: fleet.map { Self.fleetErasure(status: $0.status) }, fileSystem: fileSystem, sinkKinds: configuration.sinkKinds,
            metrics: configuration.aggregateMetrics, logger: logger)
        return ServerComponents(
            configuration: configuration, log: log, metrics: metrics, history: history, store: store, idempotency: idempotency,
            aggregator: aggregator, uploader: uploader, fleet: fleet,
            ingestor: EventIngestor(log: log, metrics: metrics),
            tenants: TenantDirectory(
                integrationKeys: configuration.integrationKeys, tenants: configuration.tenants, relayAdminToken: configuration.adminToken),
            erasure: erasure,
            leases: opened.leases.flatMap { leases in
                configuration.logPostgres.map { settings in
                    (
                        leases,
                        AdoptedStreams(configuration: configuration, settings: settings, metrics: metrics, fence: leases.fence, logger: logger)
                    )
                }
            },
            durability: opened.durability, logger: logger
        )
    }

    /// An erasure's change to the fleet's counts, through the fleet aggregator of the session open
    /// now; it fails while PostgreSQL does not answer.
    private static func fleetErasure(status: FleetStatus) -> PersonalDataErasure.FleetStep {
        { targets in
            guard let counting = status.aggregator else {
                throw FleetError.database("the fleet's PostgreSQL does not answer now (\(status.current.lastError ?? "not connected yet"))")
            }
            return try await counting.applyErasure(targets)
        }
    }

    /// The routes `serve` answers, in the order they are added (the admin token and route rules
    /// are middleware of their groups).
    func routeGroups() -> [any RouteGroup] {
        // One read-only connection to the aggregates for the counts and the status page.
        let aggregateQueries = OpenedOnce<AggregateQueries>()
        var groups: [any RouteGroup] = [
            IndexRoutes(),
            SDKRoutes(
                ingestor: ingestor, maximumFormBytes: configuration.maximumFormBytes,
                unknownFields: UnknownFormFields(metrics: metrics, logger: logger), tenants: tenants),
            EventsRoute(
                ingestor: ingestor, idempotency: idempotency, maximumBytes: configuration.maximumBatchBytes,
                maximumEvents: configuration.maximumBatchEvents, tenants: tenants),
            AdminRoutes(
                dataDirectory: configuration.dataDirectory, adminToken: configuration.adminToken, tenants: tenants, metrics: metrics, store: store,
                log: log, queries: aggregateQueries,
                fleet: fleet.map { FleetQueries(location: $0.location, metrics: configuration.aggregateMetrics, logger: logger) },
                aggregator: aggregator,
                aggregateMetrics: configuration.aggregateMetrics),
            HealthRoutes(ingestor: ingestor, upstream: relayLane, fleet: fleet?.status),
            PrivacyRoutes(
                erasure: erasure, adoptions: leases?.adoptions, dataDirectory: configuration.dataDirectory, adminToken: configuration.adminToken,
                tenants: tenants),
            LogSealRoute(log: log, keyId: configuration.log.encryption?.newest.id, adminToken: configuration.adminToken, tenants: tenants),
            StatusRoutes(
                dataDirectory: configuration.dataDirectory, adminToken: configuration.adminToken, tenants: tenants, log: log, store: store,
                history: history, uploader: uploader, aggregator: aggregator, fleet: fleet?.status, durability: durability,
                counts: aggregateQueries, aggregateMetrics: configuration.aggregateMetrics),
        ]
        if let relayToken = configuration.relayToken {
            groups.append(RelayBatchRoute(receiver: RelayBatchReceiver(ingestor: ingestor, logger: logger), token: relayToken, tenants: tenants))
        }
        return groups
    }

    /// The services `serve` runs, in start order; the group stops them in reverse, so the
    /// listener stops first (after the shutdown notifier's delay) and the log closes last.
    func services(application: any Service, certificates: (any Service)?) -> [any Service] {
        var services: [any Service] = [LogService(log: log)]
        // Before the uploader: it stops after it, so the lease goes once no lane sends.
        if let leases, let settings = configuration.logPostgres {
            services.append(
                StreamLeasesService(
                    leases: leases.leases, adoptions: leases.adoptions,
                    plans: PostgresErasurePlans(location: settings.location, stream: leases.leases.stream, fence: nil), log: log, erasure: erasure,
                    logger: logger))
        }
        if let aggregator { services.append(AggregatorService(aggregator: aggregator, logger: logger)) }
        if let uploader { services.append(UploaderService(uploader: uploader, logger: logger)) }
        if let fleet {
            services.append(
                FleetAggregationService(
                    location: fleet.location, log: log, status: fleet.status, metrics: metrics, logger: logger,
                    aggregateMetrics: configuration.aggregateMetrics))
        }
        services.append(
            MetricsSampler(
                metrics: metrics, history: history, log: log, fleet: fleet?.status, aggregator: aggregator, store: store, tenants: tenants,
                durability: durability)
        )
        if let certificates { services.append(certificates) }
        services.append(
            TenantReloadService(
                reload: configuration.reloadTenants,
                reconciler: TenantReconciler(configuration: configuration, directory: tenants, log: log, uploader: uploader, logger: logger),
                logger: logger))
        services.append(application)
        services.append(ShutdownNotifier(ingestor: ingestor, delay: configuration.shutdownDelay, systemd: configuration.systemd, logger: logger))
        return services
    }
}

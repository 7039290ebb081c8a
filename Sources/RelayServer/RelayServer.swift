import Foundation
import Hummingbird
import HummingbirdCore
public import Logging
import RelayAggregator
import RelayCore
import RelayForwarding
import RelayIO
public import RelayLog
import RelayPostgres
import RelayTLS
import ServiceLifecycle

/// `campaign-relay serve`: ingest over HTTP (SDK-compatible endpoints and a JSON API), the
/// write-ahead log, the aggregator and the uploader in one process, under
/// swift-service-lifecycle.
///
/// Acknowledgements are durable: a 200 means the events were fdatasync'ed. SIGTERM or SIGINT stop
/// the intake (503 + `Retry-After`), finish requests under way, save the aggregator's and
/// uploader's positions, close the log, and return.
public struct RelayServer: Sendable {

    /// The configuration.
    public let configuration: RelayServerConfiguration
    let logger: Logger
    /// What the log is written through.
    let fileSystem: any FileSystem

    /// A server with `configuration`, writing its log through `fileSystem` (tests pass one that
    /// fails on demand).
    public init(configuration: RelayServerConfiguration, logger: Logger, fileSystem: any FileSystem = PosixFileSystem()) {
        self.configuration = configuration
        self.logger = logger
        self.fileSystem = fileSystem
    }

    /// Why the server would not start.
    public struct StartupError: Error, CustomStringConvertible {
        /// What is wrong and what to do.
        public var description: String
    }

    /// Runs until SIGTERM/SIGINT (or the task is cancelled); `onRunning` gets the bound port.
    ///
    /// - Throws: ``StartupError`` for an unsafe configuration (a non-loopback address without an
    ///   admin token), and the log's, stores' or server's errors.
    public func run(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        guard configuration.bindsLoopbackOnly || configuration.adminToken != nil else {
            throw StartupError(
                description: "refusing to listen on \(configuration.host) without --admin-token: the admin endpoints would be open to the network"
            )
        }
        if let problem = ListenAddressCheck.problem(host: configuration.host, port: configuration.port) { throw StartupError(description: problem) }
        // Certificates first: a bad file stops the start before anything is opened.
        let certificates = try configuration.tls.map { files throws(TLSCertificateStore.Failure) in try TLSCertificateStore(files: files) }
        let log = try await WriteAheadLog.open(
            dataDirectory: configuration.dataDirectory, configuration: configuration.log, consumers: configuration.logConsumers,
            fileSystem: fileSystem, logger: logger)
        let metrics = RelayMetrics(version: RelayVersion.current)
        let history = StatusHistory()
        await log.observeCommits { commit in
            metrics.record(commit)
            history.recordSync(commit.synchronizeDuration)
        }
        await log.observeSegmentRemovals { removals in metrics.record(removals) }
        let store: ForwardingStore
        let idempotency: IdempotencyStore
        do {
            store = try await ForwardingStore(dataDirectory: configuration.dataDirectory)
            idempotency = try await IdempotencyStore(dataDirectory: configuration.dataDirectory, window: configuration.idempotencyWindow)
        } catch {
            await log.close()
            throw error
        }
        var aggregator: Aggregator?
        if configuration.aggregates {
            do {
                // Counting and forwarding yield a busy core to request handling.
                aggregator = try await Aggregator(
                    log: log, dataDirectory: configuration.dataDirectory, batchSize: configuration.aggregatorBatchSize, priority: .background,
                    pageCacheBytes: configuration.aggregatorPageCacheBytes, logger: logger)
            } catch {
                logger.error("aggregates are off until this is fixed; events are still stored and forwarded", metadata: ["error": "\(error)"])
            }
        }
        var uploader: Uploader?
        if configuration.trackingHost != nil || configuration.marketingHost != nil {
            var upload = configuration.upload
            upload.threadPriority = .background
            do {
                uploader = try Uploader(
                    log: log, trackingHost: configuration.trackingHost, marketingHost: configuration.marketingHost, store: store,
                    configuration: upload, logger: logger
                )
            } catch {
                await log.close()
                throw error
            }
        } else if configuration.upstreamRelay == nil {
            logger.notice("no --tracking-host or --marketing-host: events are stored and counted, not forwarded")
        }

        var relayLane: RelayUpstreamService?
        if let central = configuration.upstreamRelay {
            var upload = configuration.upload
            upload.threadPriority = .background
            do {
                relayLane = try RelayUpstreamService(
                    log: log, central: central, token: configuration.upstreamToken ?? "", configuration: upload, logger: logger)
            } catch {
                await log.close()
                throw error
            }
        }
        // The fleet's PostgreSQL: its own consumer of the log, with its position in the database.
        var fleet: (location: PostgresLocation, status: FleetStatus)?
        if let postgres = configuration.postgres {
            fleet = (postgres, FleetStatus())
            logger.notice("counting into the fleet's PostgreSQL too", metadata: ["database": "\(postgres)"])
        }
        let ingestor = EventIngestor(log: log, metrics: metrics, integrationKeys: configuration.integrationKeys)
        let router = Router()
        router.add(middleware: RouteMetricsMiddleware(metrics: metrics))
        let routes = RouteTable(router: router)
        SDKRoutes(
            ingestor: ingestor, maximumFormBytes: configuration.maximumFormBytes, unknownFields: UnknownFormFields(metrics: metrics, logger: logger)
        )
        .add(to: routes)
        EventsRoute(
            ingestor: ingestor, idempotency: idempotency, maximumBytes: configuration.maximumBatchBytes,
            maximumEvents: configuration.maximumBatchEvents
        )
        .add(to: routes)
        AdminRoutes(
            dataDirectory: configuration.dataDirectory, adminToken: configuration.adminToken, metrics: metrics, store: store, log: log,
            upstream: relayLane?.lane, fleet: fleet.map { FleetQueries(location: $0.location, logger: logger) }
        ).add(to: routes)
        HealthRoutes(ingestor: ingestor, upstream: relayLane?.lane, fleet: fleet?.status).add(to: routes)
        var hosts: [String: String] = [:]
        if let host = configuration.trackingHost { hosts[UploadLane.Kind.tracking.rawValue] = host.description }
        if let host = configuration.marketingHost { hosts[UploadLane.Kind.marketing.rawValue] = host.description }
        StatusRoutes(
            adminToken: configuration.adminToken, log: log, store: store, history: history, uploader: uploader, hosts: hosts,
            relayLane: relayLane?.lane, relayURL: configuration.upstreamRelay?.description, aggregator: aggregator, fleet: fleet?.status
        ).add(to: routes)
        if let relayToken = configuration.relayToken {
            RelayBatchRoute(receiver: RelayBatchReceiver(ingestor: ingestor, logger: logger), token: relayToken).add(to: routes)
        }
        routes.refuseOtherMethods()

        let host = configuration.host
        let serverLogger = logger
        let idleTimeoutNanoseconds = configuration.idleTimeout.nanoseconds
        let scheme = certificates == nil ? "http" : "https"
        // server.json is written and removed off the cooperative pool, as every file operation is.
        let recordFiles = BlockingExecutor(name: "server-record")
        let app = Application(
            router: router,
            server: .http1(
                tls: certificates,
                // Hummingbird's idle timeout counts from the last request part read (or answer
                // written): header bytes that never complete a head are not a part, so a slowloris
                // client is closed like an idle one.
                configuration: HTTP1Channel.Configuration(idleTimeout: .nanoseconds(idleTimeoutNanoseconds))),
            // A backlog of 4,096 (Linux's default net.core.somaxconn, which caps it) rather than
            // Hummingbird's 256: when thousands of SDKs reconnect at once, a full accept queue
            // drops their SYNs and each waits out a 1 s retransmission; 10,000 connections opened
            // in 1.4 s instead of 14.6 s (a release build, Tests/…/Scripts/idle_flood.py).
            configuration: .init(
                address: .hostname(host, port: configuration.port), serverName: "campaign-relay", backlog: 4096,
                availableConnectionsDelegate: MaximumAvailableConnections(ConnectionBudget.maximumConnections(), logger: logger)),
            onServerRunning: { [configuration] channel in
                let port = channel.localAddress?.port ?? 0
                let reachable = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "[::1]" : host.contains(":") ? "[\(host)]" : host
                let record = ServerRecord(
                    pid: getpid(), url: "\(scheme)://\(reachable):\(port)", aggregates: configuration.aggregates,
                    forwardsTracking: configuration.trackingHost != nil, forwardsRegistrations: configuration.marketingHost != nil,
                    requiresClientCertificate: configuration.tls?.clientCertificateAuthorities != nil, version: RelayVersion.current
                )
                do {
                    try await recordFiles.run { () throws(any Error) in try record.write(dataDirectory: configuration.dataDirectory) }
                } catch {
                    serverLogger.warning(
                        "could not record the server's address; other commands will not find it", metadata: ["error": "\(error)"]
                    )
                }
                // Logged once the record exists, so whoever waits for this line finds the server.
                serverLogger.notice("campaign-relay listening", metadata: ["address": "\(host):\(port)", "scheme": "\(scheme)"])
                configuration.systemd.notify("READY=1\nSTATUS=listening on \(host):\(port)", telling: "the relay is ready", logger: serverLogger)
                await onRunning(port)
            },
            logger: logger
        )
        var services: [any Service] = [LogService(log: log)]
        if let aggregator { services.append(AggregatorService(aggregator: aggregator, logger: logger)) }
        if let uploader { services.append(UploaderService(uploader: uploader, logger: logger)) }
        if let relayLane { services.append(relayLane) }
        if let fleet {
            services.append(FleetAggregationService(location: fleet.location, log: log, status: fleet.status, metrics: metrics, logger: logger))
        }
        services.append(
            MetricsSampler(
                metrics: metrics, history: history, log: log, uploader: uploader, relayLane: relayLane?.lane, fleet: fleet?.status,
                aggregator: aggregator, store: store
            ))
        if let certificates { services.append(CertificateReloadService(certificates: certificates, logger: logger)) }
        services.append(app)
        services.append(
            ShutdownNotifier(ingestor: ingestor, delay: configuration.shutdownDelay, systemd: configuration.systemd, logger: logger))
        var groupConfiguration = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownDelay + configuration.shutdownTimeout
        let dataDirectory = configuration.dataDirectory
        do {
            try await ServiceGroup(configuration: groupConfiguration).run()
        } catch {
            await recordFiles.run { ServerRecord.remove(dataDirectory: dataDirectory, pid: getpid()) }
            throw error
        }
        await recordFiles.run { ServerRecord.remove(dataDirectory: dataDirectory, pid: getpid()) }
        let durable = await log.durableSequence
        logger.notice("campaign-relay stopped", metadata: ["last-durable-sequence": "\(durable - 1)"])
    }
}

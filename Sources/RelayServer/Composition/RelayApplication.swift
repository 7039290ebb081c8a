import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import RelayCore
import RelayIO
import RelayTLS
import ServiceLifecycle

/// The HTTP side of `serve`: the router with every route group of ``ServerComponents``, the
/// listener's settings, and what happens once it listens (server.json, the "listening" line,
/// systemd's READY=1).
enum RelayApplication {
    /// The `Server` header of every answer.
    static let serverName = "campaign-relay"

    /// The Hummingbird application answering `routes` as `configuration` says; `recordFiles` is
    /// the thread that writes server.json, `onRunning` hears the bound port.
    static func make(
        configuration: RelayServerConfiguration, routes groups: [any RouteGroup], metrics: RelayMetrics, certificates: TLSCertificateStore?,
        recordFiles: BlockingExecutor, ingestor: EventIngestor, tenants: TenantDirectory, logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void
    ) -> some Service {
        let router = Router()
        router.add(middleware: RouteMetricsMiddleware(metrics: metrics))
        let routes = RouteTable(router: router)
        for group in groups { group.add(to: routes) }
        routes.refuseOtherMethods()

        let host = configuration.host
        let scheme = certificates == nil ? "http" : "https"
        // Hummingbird's idle timeout counts from the last request part read (or answer written):
        // header bytes that never complete a head are not a part, so a slowloris client is closed
        // like an idle one.
        let http1 = HTTP1Channel.Configuration(idleTimeout: .nanoseconds(configuration.idleTimeout.nanoseconds))
        let answersHits = configuration.answersTrackingHitsOnEventLoop
        let date = HTTPDateHeader()
        @Sendable func secured(_ channel: some ServerChildChannel) -> any ServerChildChannel {
            guard let certificates else { return channel }
            return ReloadableTLSChannel(channel, certificates: certificates)
        }
        let server = HTTPServerBuilder { responder in
            let http = HTTP1Channel(responder: responder, configuration: http1)
            guard answersHits else { return secured(http) }
            return secured(
                TrackingHitChannel(base: http) { TrackingHitHandler(ingestor: ingestor, tenants: tenants, serverName: serverName, date: date) })
        }
        return Application(
            router: router,
            server: server,
            // A backlog of 4,096 (Linux's default net.core.somaxconn, which caps it) rather than
            // Hummingbird's 256: when thousands of SDKs reconnect at once, a full accept queue
            // drops their SYNs and each waits out a 1 s retransmission; 10,000 connections opened
            // in 1.4 s instead of 14.6 s (a release build, Tests/…/Scripts/idle_flood.py).
            configuration: .init(
                address: .hostname(host, port: configuration.port), serverName: serverName, backlog: 4096,
                availableConnectionsDelegate: MaximumAvailableConnections(ConnectionBudget.maximumConnections(), logger: logger)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let reachable = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "[::1]" : host.contains(":") ? "[\(host)]" : host
                let record = ServerRecord(
                    pid: getpid(), url: "\(scheme)://\(reachable):\(port)", aggregates: configuration.aggregates,
                    forwardsTracking: configuration.trackingHost != nil, forwardsRegistrations: configuration.marketingHost != nil,
                    requiresClientCertificate: configuration.tls?.clientCertificateAuthorities != nil, version: RelayVersion.current,
                    archiveDirectory: configuration.log.archiveDirectory.map(ServerRecord.canonical)
                )
                // server.json is written off the cooperative pool, as every file operation is.
                do {
                    try await recordFiles.run { () throws(any Error) in try record.write(dataDirectory: configuration.dataDirectory) }
                } catch {
                    logger.warning("could not record the server's address; other commands will not find it", metadata: ["error": "\(error)"])
                }
                // Logged once the record exists, so whoever waits for this line finds the server.
                logger.notice("campaign-relay listening", metadata: ["address": "\(host):\(port)", "scheme": "\(scheme)"])
                configuration.systemd.notify("READY=1\nSTATUS=listening on \(host):\(port)", telling: "the relay is ready", logger: logger)
                await onRunning(port)
            },
            logger: logger
        )
    }
}

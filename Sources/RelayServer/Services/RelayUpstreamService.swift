import CampaignProtocol
import Logging
import RelayForwarding
import RelayLog
import ServiceLifecycle

/// Hands the log to a central relay (`serve --upstream-relay`) until the server stops, on a
/// background event loop of its own, then saves the position.
struct RelayUpstreamService: Service {
    /// The lane to the central relay (a ``CentralRelaySink``).
    let lane: UploadLane
    let transport: HTTPClientTransport
    let upstream: UpstreamEventLoop
    let logger: Logger

    init(
        log: WriteAheadLog, central: CampaignHost, token: String, configuration: UploadConfiguration, metrics: LaneMetrics, logger: Logger
    ) throws(UpstreamTLS.Failure) {
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
        self.lane = UploadLane(
            sink: CentralRelaySink(host: central, token: token), log: log, transport: transport, configuration: configuration, logger: logger,
            metrics: metrics)
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

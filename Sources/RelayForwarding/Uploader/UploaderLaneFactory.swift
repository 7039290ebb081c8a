import CampaignProtocol
import Logging
import NIOSSL
import RelayCore

/// What the uploader makes every lane with, and how it makes the lanes of one ``SinkList``.
struct UploaderLaneFactory: Sendable {
    let source: UploadLane.Source
    let store: ForwardingStore
    let configuration: UploadConfiguration
    let deduplicates: Bool
    let logger: Logger
    let metrics: @Sendable (any Sink) -> LaneMetrics
    let upstream: UpstreamEventLoop

    /// The lanes of one list and what they send through.
    struct Made {
        var lanes: [UploadLane] = []
        var transports: [HTTPClientTransport] = []
        var pipelines: [TrackingHitPipeline] = []
    }

    /// The lanes of `list`: its event sinks over one client with `tls` (each with the pipeline its
    /// sink makes, if any), each batch sink over a client of its own with `batchTLS`.
    ///
    /// A tenant's event sinks share one TLS set-up and one client, and no two tenants share one, so
    /// one tenant's slow host never holds another's connections. A batch sink (a central relay)
    /// sends one batch at a time, in order: one connection, and a redirection is refused, not
    /// followed; it needs the open log (a replay has none to hand on).
    func lanes(of list: SinkList, tls: TLSConfiguration, batchTLS: TLSConfiguration?) -> Made {
        var made = Made()
        // A tenant's own ceiling replaces the relay's for its hosts.
        var configuration = configuration
        if let rate = list.maximumRate { configuration.maximumRate = rate }
        var shared: HTTPClientTransport?
        for sink in list.sinks {
            switch sink {
            case let sink as any EventSink:
                let transport =
                    shared
                    ?? HTTPClientTransport(
                        connectionsPerHost: configuration.concurrency, retryStatuses: configuration.retryStatuses,
                        maximumRedirects: configuration.maximumRedirects, tls: tls, eventLoopGroup: upstream.group)
                if shared == nil {
                    shared = transport
                    made.transports.append(transport)
                }
                // A pipeline per host: the first and each spare.
                var pipelines: [TrackingHitPipeline] = []
                for host in sink.hosts {
                    do {
                        if let pipeline = try sink.makePipeline(
                            to: host, connections: configuration.concurrency, timeout: configuration.requestTimeout,
                            retryStatuses: configuration.retryStatuses, tls: tls, eventLoop: upstream.group.next())
                        {
                            pipelines.append(pipeline)
                        }
                    } catch {
                        logger.warning(
                            "tracking hits go one request at a time: TLS setup failed",
                            metadata: ["error": "\(error)", "tenant": "\(list.tenant.displayName)", "host": "\(host)"])
                    }
                }
                made.pipelines += pipelines
                made.lanes.append(
                    UploadLane(
                        sink: sink, transport: transport, store: store, source: source, configuration: configuration, deduplicates: deduplicates,
                        logger: logger, pipelines: pipelines, metrics: metrics(sink)))
            case let sink as any BatchSink:
                guard let batchTLS, case .cursor(let log) = source else { continue }
                let transport = HTTPClientTransport(
                    connectionsPerHost: 1, retryStatuses: configuration.retryStatuses, maximumRedirects: 0, tls: batchTLS,
                    eventLoopGroup: upstream.group)
                made.transports.append(transport)
                made.lanes.append(
                    UploadLane(sink: sink, log: log, transport: transport, configuration: configuration, logger: logger, metrics: metrics(sink)))
            default:
                logger.error("a sink of neither shape is not forwarded to", metadata: ["lane": "\(sink.name)"])
            }
        }
        return made
    }

    /// The TLS set-up of a tenant's endpoints: its own CA file, or the relay's.
    func tls(for list: SinkList, default defaultTLS: TLSConfiguration) throws(UpstreamTLS.Failure) -> TLSConfiguration {
        guard let caFile = list.trustedCertificateAuthorities else { return defaultTLS }
        do {
            return try UpstreamTLS.clientConfiguration(trusting: caFile)
        } catch {
            throw UpstreamTLS.Failure(description: "[tenant.\(list.tenant.displayName)] ca-file: \(error.description)")
        }
    }
}

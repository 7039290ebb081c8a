public import CampaignProtocol
public import NIOCore
public import NIOSSL
public import RelayCore

/// The Campaign tracking host: every tracking hit, as `GET /r/?id=h…`, exactly as the SDKs send it.
/// Its lane also sends healthy-host batches of hits through a ``TrackingHitPipeline`` (its
/// ``makePipeline(to:connections:timeout:retryStatuses:tls:eventLoop:)`` hook, one per host).
public struct TrackingHostSink: EventSink {
    /// The default tenant's lane's name and its cursor's (`upload-tracking`).
    public static let laneName = UploadLane.Kind.tracking.rawValue

    public var name: String { UploadLane.Kind.tracking.laneName(of: tenant) }
    public var kind: SinkKind { .campaignTracking }
    public var endpoint: String { host.description }
    /// The host it sends to.
    public let host: CampaignHost
    /// Its spare hosts: each with a breaker and a limit of its own, they share the load with
    /// ``host`` and carry it while it fails (``UploadLane``'s routes).
    public let spares: [CampaignHost]
    public let tenant: TenantName?

    /// The tracking host at `host` with `spares`, for the events of `tenant` (`nil`: the default tenant's).
    public init(host: CampaignHost, spares: [CampaignHost] = [], tenant: TenantName? = nil) {
        self.host = host
        self.spares = spares
        self.tenant = tenant
    }

    public var hosts: [CampaignHost] { [host] + spares }

    public func carries(_ event: Event) -> Bool { UploadLane.Kind.tracking.carries(event, of: tenant) }

    public func request(for event: Event, to host: CampaignHost) -> CampaignRequest? { .carrying(event, to: host) }

    public func makePipeline(
        to host: CampaignHost, connections: Int, timeout: Duration, retryStatuses: Set<Int>, tls: TLSConfiguration, eventLoop: any EventLoop
    ) throws -> TrackingHitPipeline? {
        try TrackingHitPipeline(host: host, connections: connections, timeout: timeout, retryStatuses: retryStatuses, tls: tls, eventLoop: eventLoop)
    }
}

extension SinkKind {
    /// Campaign's tracking host: tracking hits, delivered; one lane per tenant.
    public static let campaignTracking = SinkKind(
        label: UploadLane.Kind.tracking.rawValue, scope: .perTenant, role: .delivers, carriesRegistrations: false, tally: .counted("tracking hit"))
}

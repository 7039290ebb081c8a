public import CampaignProtocol
public import RelayCore

/// The Campaign tracking host: every tracking hit, as `GET /r/?id=h…`, exactly as the SDKs send it.
/// The lane also sends healthy-host batches of hits through a ``TrackingHitPipeline``.
public struct TrackingHostSink: EventSink {
    /// The default tenant's lane's name and its cursor's (`upload-tracking`).
    public static let laneName = UploadLane.Kind.tracking.rawValue

    public var name: String { UploadLane.Kind.tracking.laneName(of: tenant) }
    public let host: CampaignHost
    public let tenant: TenantName?
    public var kind: UploadLane.Kind? { .tracking }

    /// The tracking host at `host`, for the events of `tenant` (`nil`: the default tenant's).
    public init(host: CampaignHost, tenant: TenantName? = nil) {
        self.host = host
        self.tenant = tenant
    }

    public func carries(_ event: Event) -> Bool { UploadLane.Kind.tracking.carries(event, of: tenant) }

    public func request(for event: Event) -> CampaignRequest? { .carrying(event, to: host) }
}

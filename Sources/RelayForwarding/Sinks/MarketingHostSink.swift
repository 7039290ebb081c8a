public import CampaignProtocol
public import RelayCore

/// The Campaign marketing host: every registration, as `POST …/registerIOS.jssp` or
/// `registerAndroid.jssp`, exactly as the SDKs send it. The lane keeps each device token's
/// registrations in log order and skips JSON or file registrations unchanged since their last
/// delivery (``UploadLane``'s `deduplicates`).
public struct MarketingHostSink: EventSink {
    /// The default tenant's lane's name and its cursor's (`upload-marketing`).
    public static let laneName = UploadLane.Kind.marketing.rawValue

    public var name: String { UploadLane.Kind.marketing.laneName(of: tenant) }
    public let host: CampaignHost
    public let tenant: TenantName?
    public var kind: UploadLane.Kind? { .marketing }

    /// The marketing host at `host`, for the events of `tenant` (`nil`: the default tenant's).
    public init(host: CampaignHost, tenant: TenantName? = nil) {
        self.host = host
        self.tenant = tenant
    }

    public func carries(_ event: Event) -> Bool { UploadLane.Kind.marketing.carries(event, of: tenant) }

    public func request(for event: Event) -> CampaignRequest? { .carrying(event, to: host) }
}

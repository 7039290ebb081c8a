public import CampaignProtocol
public import RelayCore

/// The Campaign marketing host: every registration, as `POST …/registerIOS.jssp` or
/// `registerAndroid.jssp`, exactly as the SDKs send it. Its hooks keep each device token's
/// registrations in log order (``orderingKey(of:)``), skip JSON or file registrations unchanged
/// since their last delivery (``unchangedRegistration(in:)``), and mark every send for the erasure.
public struct MarketingHostSink: EventSink {
    /// The default tenant's lane's name and its cursor's (`upload-marketing`).
    public static let laneName = UploadLane.Kind.marketing.rawValue

    public var name: String { UploadLane.Kind.marketing.laneName(of: tenant) }
    public var kind: SinkKind { .campaignMarketing }
    public var endpoint: String { host.description }
    /// The host it sends to.
    public let host: CampaignHost
    /// Its spare hosts: each with a breaker and a limit of its own, they share the load with
    /// ``host`` and carry it while it fails (``UploadLane``'s routes).
    public let spares: [CampaignHost]
    public let tenant: TenantName?

    /// The marketing host at `host` with `spares`, for the events of `tenant` (`nil`: the default tenant's).
    public init(host: CampaignHost, spares: [CampaignHost] = [], tenant: TenantName? = nil) {
        self.host = host
        self.spares = spares
        self.tenant = tenant
    }

    public var hosts: [CampaignHost] { [host] + spares }

    public func carries(_ event: Event) -> Bool { UploadLane.Kind.marketing.carries(event, of: tenant) }

    public func request(for event: Event, to host: CampaignHost) -> CampaignRequest? { .carrying(event, to: host) }

    /// Registrations of one device token go out in log order (a token refresh or an opt-out must
    /// not overtake the registration before it).
    public func orderingKey(of event: Event) -> String? { UploadLane.Kind.deviceTokenOrder(event) }

    /// What an SDK posts was already deduplicated by the SDK and is forwarded; a registration from
    /// JSON or a file is skipped when unchanged since its token's last delivery.
    public func unchangedRegistration(in event: Event) -> Registration? {
        guard case .registration(let registration) = event, registration.sdkForm == nil else { return nil }
        return registration
    }

    /// Every registration's send is marked: an erasure waits for it, and learns whether Campaign took it.
    public func marksSendForErasure(_ event: Event) -> Bool {
        if case .registration = event { return true }
        return false
    }
}

extension SinkKind {
    /// Campaign's marketing host: registrations, delivered; one lane per tenant.
    public static let campaignMarketing = SinkKind(
        label: UploadLane.Kind.marketing.rawValue, scope: .perTenant, role: .delivers, carriesRegistrations: true, tally: .counted("registration"))
}

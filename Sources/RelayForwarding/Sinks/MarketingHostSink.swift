public import CampaignProtocol
public import RelayCore

/// The Campaign marketing host: every registration, as `POST …/registerIOS.jssp` or
/// `registerAndroid.jssp`, exactly as the SDKs send it. The lane keeps each device token's
/// registrations in log order and skips JSON or file registrations unchanged since their last
/// delivery (``UploadLane``'s `deduplicates`).
public struct MarketingHostSink: EventSink {
    /// The lane's name and its cursor's (`upload-marketing`).
    public static let laneName = UploadLane.Kind.marketing.rawValue

    public var name: String { Self.laneName }
    public let host: CampaignHost

    /// The marketing host at `host`.
    public init(host: CampaignHost) { self.host = host }

    public func carries(_ event: Event) -> Bool { UploadLane.Kind.marketing.carries(event) }

    public func request(for event: Event) -> CampaignRequest { .carrying(event, to: host) }
}

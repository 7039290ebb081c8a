public import CampaignProtocol
public import RelayCore

/// The Campaign tracking host: every tracking hit, as `GET /r/?id=h…`, exactly as the SDKs send it.
/// The lane also sends healthy-host batches of hits through a ``TrackingHitPipeline``.
public struct TrackingHostSink: EventSink {
    /// The lane's name and its cursor's (`upload-tracking`).
    public static let laneName = UploadLane.Kind.tracking.rawValue

    public var name: String { Self.laneName }
    public let host: CampaignHost

    /// The tracking host at `host`.
    public init(host: CampaignHost) { self.host = host }

    public func carries(_ event: Event) -> Bool { UploadLane.Kind.tracking.carries(event) }

    public func request(for event: Event) -> CampaignRequest { .carrying(event, to: host) }
}

public import CampaignProtocol
public import RelayCore

/// A destination that takes the log's events one request each (a Campaign host): which events it
/// carries, and the request that carries one.
///
/// Its lane (``UploadLane/init(sink:transport:store:source:configuration:deduplicates:logger:pipeline:metrics:)``)
/// reads in log order and sends with bounded concurrency, within the duplicate bound, each event
/// retried on its own schedule and dead-lettered when the host rejects it; registrations of one
/// device token go in log order.
public protocol EventSink: Sink {
    /// Whether `event` goes to this destination; the others are passed over.
    func carries(_ event: Event) -> Bool
    /// The request that carries `event`, byte for byte as the SDKs send it; `nil` for an event
    /// nothing carries (an erased registration).
    func request(for event: Event) -> CampaignRequest?
}

extension EventSink {
    /// "tracking host", "tracking host of brand-a".
    public var destinationName: String {
        let host = "\(kind?.rawValue ?? name) host"
        return tenant.map { "\(host) of \($0.text)" } ?? host
    }
}

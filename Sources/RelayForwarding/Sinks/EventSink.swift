public import CampaignProtocol
public import RelayCore

/// A destination that takes the log's events one request each (a Campaign host), as the sink
/// driver (``UploadLane``) sees it: which events it carries, the request that carries one, and
/// whether it keeps registration order and skips unchanged registrations.
///
/// The driver owns everything else: reading the log, bounded concurrency, the duplicate bound,
/// per-event retries with backoff and `Retry-After`, the circuit breaker, dead letters, progress,
/// the cursor and the metrics. A new destination of this shape is one type conforming to this
/// protocol, handed to ``UploadLane/init(sink:transport:store:source:configuration:deduplicates:logger:pipeline:metrics:)``.
public protocol EventSink: Sendable {
    /// The lane's name: its cursor is `upload-<name>`, and progress, summaries and metrics show it.
    var name: String { get }
    /// The host it sends to, for log lines and dead letters.
    var host: CampaignHost { get }
    /// How log lines name it ("tracking host"; by default the name and "host").
    var destinationName: String { get }
    /// Whether `event` goes to this destination; the others are passed over.
    func carries(_ event: Event) -> Bool
    /// The request that carries `event`, byte for byte as the SDKs send it.
    func request(for event: Event) -> CampaignRequest
}

extension EventSink {
    public var destinationName: String { "\(name) host" }

    /// The log cursor of the lane that sends to this destination.
    public var cursorName: String { "upload-\(name)" }
}

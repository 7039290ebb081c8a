public import CampaignProtocol
public import RelayCore
public import RelayLog

/// A destination of the log's events, as the one sink driver (``UploadLane``) sees it: a name,
/// a host, and (in the two shapes that refine it, ``EventSink`` and ``BatchSink``) how events
/// become requests and what the answers mean.
///
/// The driver owns everything else: reading the log, the circuit breaker, backoff and
/// `Retry-After`, progress, the cursor `upload-<name>` and the metrics. A new kind of upstream is
/// one type conforming to one of the two shapes, plus its options and the line in ``Uploader``
/// that makes its lane.
public protocol Sink: Sendable {
    /// The lane's name: its cursor is `upload-<name>`, and progress, summaries and metrics show it.
    var name: String { get }
    /// The host it sends to, for log lines and dead letters.
    var host: CampaignHost { get }
    /// How log lines name it ("tracking host", "central relay").
    var destinationName: String { get }
    /// The tenant whose events it takes alone; `nil` for the default tenant's or every tenant's.
    var tenant: TenantName? { get }
    /// The Campaign host's kind of events it takes; `nil` for another destination.
    var kind: UploadLane.Kind? { get }
}

extension Sink {
    public var tenant: TenantName? { nil }
    public var kind: UploadLane.Kind? { nil }

    /// The log cursor of the lane that sends to this destination.
    public var cursorName: String { "upload-\(name)" }
    /// The lane as a consumer of the log: its cursor is its position.
    public var consumer: LogConsumerDeclaration { .cursorFile(cursorName) }
}

public import RelayCore
public import RelayLog

/// A destination of the log's events, as the one sink driver (``UploadLane``) sees it: an
/// endpoint with a name, where it is, whose events and which events it carries, and what kind of
/// destination it is (``SinkKind``); the two shapes that refine it, ``EventSink`` and
/// ``BatchSink``, say how events become requests and what the answers mean.
///
/// The driver owns everything else: reading the log, the circuit breaker, backoff and
/// `Retry-After`, progress, the cursor `upload-<name>` and the metrics. Everything that lists
/// destinations (the log's consumers, the metric labels, the erasure's check of what was sent
/// on, the upload summary, the status page) reads the list of sinks configuration builds
/// (``SinkList``), never a list of its own. A new kind of upstream is one type conforming to one
/// of the two shapes, and the line that puts it in that list.
///
/// Two sinks are equal when they send the same events to the same place the same way: a reload
/// that leaves a tenant's sinks equal leaves its lanes running.
public protocol Sink: Sendable, Hashable {
    /// The lane's name: its cursor is `upload-<name>`, and progress, summaries and metrics show it
    /// (usually ``SinkKind/laneName(of:)`` of its kind and tenant).
    var name: String { get }
    /// What kind of destination it is: its label in metrics and on the status page, whether it is
    /// the events' last stop or hands them on, how summaries count what it took.
    var kind: SinkKind { get }
    /// Where it sends, for log lines, dead letters and the status page (a URL).
    var endpoint: String { get }
    /// How log lines name it ("tracking host", "central relay").
    var destinationName: String { get }
    /// The tenant whose events it takes alone; `nil` for the default tenant's, or for every
    /// tenant's when its kind is ``SinkKind/Scope/everyTenant``.
    var tenant: TenantName? { get }
    /// Whether `event` goes to this destination; the others are passed over.
    func carries(_ event: Event) -> Bool
}

extension Sink {
    public var tenant: TenantName? { nil }

    /// The log cursor of the lane that sends to this destination.
    public var cursorName: String { "upload-\(name)" }
    /// The lane as a consumer of the log: its cursor is its position.
    public var consumer: LogConsumerDeclaration { .cursorFile(cursorName) }

    /// Whether `other` is the same sink (sinks of different types never are).
    func isSame(as other: any Sink) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}

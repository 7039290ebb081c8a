public import CampaignProtocol
public import NIOCore
public import NIOSSL
public import RelayCore

/// A destination that takes the log's events one request each (a Campaign host): which events it
/// carries, the request that carries one, and the rules of its own the lane applies through its
/// hooks.
///
/// Its lane (``UploadLane/init(sink:transport:store:source:configuration:deduplicates:logger:pipeline:metrics:)``)
/// reads in log order and sends with bounded concurrency, within the duplicate bound, each event
/// retried on its own schedule and dead-lettered when the destination rejects it. The hooks, each
/// with a default that does nothing special:
/// - ``orderingKey(of:)``: events of one key go one at a time, in log order;
/// - ``unchangedRegistration(in:)``: a registration skipped when it equals the last one delivered;
/// - ``marksSendForErasure(_:)``: a send an erasure beginning meanwhile must wait for;
/// - ``makePipeline(to:connections:timeout:retryStatuses:tls:eventLoop:)``: batches of events over
///   a pipeline of its own to each healthy host.
public protocol EventSink: Sink {
    /// The hosts it sends to: the first, then its spares (the lane keeps a breaker, a limit and a
    /// pipeline per host, and sends each request to one of them).
    var hosts: [CampaignHost] { get }
    /// The request that carries `event` to `host` (one of ``hosts``), byte for byte as the
    /// destination expects it; `nil` for an event nothing carries (an erased registration).
    func request(for event: Event, to host: CampaignHost) -> CampaignRequest?
    /// The key whose events go out one at a time, in log order (a device token, for Campaign's
    /// registrations); `nil`: the event may overtake anything, and anything it.
    func orderingKey(of event: Event) -> String?
    /// The registration to skip when it equals the last one delivered for its token within
    /// ``UploadConfiguration/registrationDeduplicationWindow`` (remembered when delivered); `nil`
    /// for an event always sent.
    func unchangedRegistration(in event: Event) -> Registration?
    /// Whether a send of `event` is marked on the wire, so that an erasure beginning meanwhile waits
    /// for its answer and learns whether it was delivered.
    func marksSendForErasure(_ event: Event) -> Bool
    /// A pipeline that sends healthy-host batches of this sink's events to `host` in one event-loop
    /// hop each; `nil` (the default) sends every event on its own.
    ///
    /// - Throws: when the pipeline's TLS cannot be set up (the lane then sends one at a time).
    func makePipeline(
        to host: CampaignHost, connections: Int, timeout: Duration, retryStatuses: Set<Int>, tls: TLSConfiguration, eventLoop: any EventLoop
    ) throws -> TrackingHitPipeline?
}

extension EventSink {
    public func orderingKey(of event: Event) -> String? { nil }

    public func unchangedRegistration(in event: Event) -> Registration? { nil }

    /// Every registration is marked: whatever carries personal data must be accounted for by an erasure.
    public func marksSendForErasure(_ event: Event) -> Bool {
        if case .registration = event { return true }
        return false
    }

    public func makePipeline(
        to host: CampaignHost, connections: Int, timeout: Duration, retryStatuses: Set<Int>, tls: TLSConfiguration, eventLoop: any EventLoop
    ) throws -> TrackingHitPipeline? { nil }

    /// "tracking host", "tracking host of brand-a".
    public var destinationName: String {
        let host = "\(kind.label) host"
        return tenant.map { "\(host) of \($0.text)" } ?? host
    }
}

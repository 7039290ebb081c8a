public import CampaignProtocol
public import RelayCore
import RelayLog

/// A destination that takes every event of the log in ordered batches (a central relay): the
/// request that carries a batch, and what an answer means.
///
/// Batches go one at a time, in log order, each covering the sequence numbers from where the last
/// one ended (damaged ones included) and never spanning two epochs of the data directory; the
/// driver moves the lane's cursor only when the destination took a batch. The driver owns the
/// reading, the breaker, backoff and `Retry-After`, progress, the cursor and the metrics.
public protocol BatchSink: Sink {
    /// Events per batch, at most.
    var batchEvents: Int { get }
    /// The request that carries `events`, which cover `sequences` of epoch `epoch` of relay `relayID`.
    func request(for events: [SequencedEvent], sequences: Range<UInt64>, epoch: UInt32, relayID: String) -> CampaignRequest
    /// What `outcome`, the answer to the batch of `sequences`, means for the lane.
    func answer(_ outcome: DeliveryOutcome, sequences: Range<UInt64>) -> BatchAnswer
}

/// What an answer to a batch means (``BatchSink/answer(_:sequences:)``).
public enum BatchAnswer: Sendable, Hashable {
    /// The destination took the batch (durably): the lane moves past it.
    case taken
    /// The destination lacks earlier events: the lane reads again from this sequence number.
    case resendFrom(UInt64)
    /// The destination answered and refused: the events wait and the batch goes again after
    /// `delay`; `logged` is the error line that says so, and `reason` (the answer) goes with it
    /// and is shown as the lane's last failure.
    case refused(reason: String, delay: Duration, logged: String)
    /// The batch never reached the wire: send it again at once (neither an answer nor a failure).
    case sendAgain
    /// The destination did not answer (or asked to be retried): a failure of the host, behind the
    /// breaker and backoff, honouring `retryAfter`.
    case failed(reason: String, retryAfter: Duration?)
}

extension BatchSink {
    /// Every event: a batch covers a range of sequence numbers, whatever they hold.
    public func carries(_ event: Event) -> Bool { true }

    /// "<name> destination".
    public var destinationName: String { "\(name) destination" }
}

import NIOConcurrencyHelpers
public import RelayCore

/// The leases this process holds on streams, as far as it can know without asking: each is valid
/// until a deadline on this machine's monotonic clock, counted from before the statement that
/// granted or renewed it was sent, and one second short of the lease, so that it ends here before
/// it ends in the database's clock. A process frozen past that deadline (SIGSTOP, a partition)
/// finds its lease gone on waking, before it sends anything.
public final class StreamLeaseFence: Sendable {
    struct Held: Sendable {
        var holder: String
        var token: Int64
        var validUntil: ContinuousClock.Instant
    }

    private let held = NIOLockedValueBox<[String: Held]>([:])

    /// No lease held.
    public init() {}

    /// The holder and token of `stream`'s lease while it is valid here, else `nil`.
    func current(for stream: String) -> (holder: String, token: Int64)? {
        held.withLockedValue { leases in
            guard let lease = leases[stream], ContinuousClock.now < lease.validUntil else { return nil }
            return (lease.holder, lease.token)
        }
    }

    /// Whether `stream`'s lease is held and valid now.
    public func holds(_ stream: String) -> Bool { current(for: stream) != nil }

    /// `stream`'s lease was granted or renewed by a statement sent at `sentAt`.
    func granted(_ stream: String, holder: String, token: Int64, sentAt: ContinuousClock.Instant, lease: Duration) {
        let margin = min(Duration.seconds(1), lease / 4)
        held.withLockedValue { $0[stream] = Held(holder: holder, token: token, validUntil: sentAt + lease - margin) }
    }

    /// `stream`'s lease is no longer held (released, or taken by another).
    func lost(_ stream: String) {
        held.withLockedValue { _ = $0.removeValue(forKey: stream) }
    }

    /// The permit of `stream`'s lanes: they may send while its lease is valid here.
    public func permit(for stream: String) -> any ForwardingPermit { StreamPermit(fence: self, stream: stream) }

    private struct StreamPermit: ForwardingPermit {
        let fence: StreamLeaseFence
        let stream: String
        var tenure: Int64? { fence.current(for: stream)?.token }
    }
}

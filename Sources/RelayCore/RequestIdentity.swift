/// The keyed request an entry of the log was stored for: a `POST /v1/events` with an
/// `Idempotency-Key`, and the event's place in that request's batch.
///
/// The relay sets it, never the client. After a crash between storing a keyed request's events and
/// answering it, the retry finds exactly the request's own entries by this identity, so an
/// identical event from another client is never taken for one of them.
public struct RequestIdentity: Sendable, Hashable {
    /// The `Idempotency-Key` (1 to 255 bytes).
    public var key: String
    /// The event's index in the request's batch, from 0.
    public var index: Int

    /// The identity of event `index` of the request with `key`.
    public init(key: String, index: Int) {
        self.key = key
        self.index = index
    }
}

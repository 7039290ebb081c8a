/// What became of one attempt to deliver an event to a Campaign host.
public enum DeliveryOutcome: Sendable, Hashable {
    /// The host answered exactly 200.
    case delivered
    /// Worth retrying: a transport error, a timeout, or 408, 425, 429, 500, 502, 503, 504. The delay
    /// the host asked for (`Retry-After`), if any.
    case retryable(reason: String, retryAfter: Duration?)
    /// Any other answer: the host will never accept it. The event goes to the dead-letter store.
    case rejected(status: Int, body: String)

    /// HTTP statuses retried; every other non-200 status is a permanent rejection.
    public static let retryableStatuses: Set<Int> = [408, 425, 429, 500, 502, 503, 504]

    /// Classifies an HTTP answer.
    public static func classify(status: Int, retryAfter: String?, body: String, now: Double) -> DeliveryOutcome {
        if status == 200 { return .delivered }
        if retryableStatuses.contains(status) {
            return .retryable(reason: "HTTP \(status)", retryAfter: retryAfter.flatMap { RetryAfter.delay($0, now: now) })
        }
        return .rejected(status: status, body: body)
    }
}

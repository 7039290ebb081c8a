import CampaignProtocol

/// What became of one attempt to deliver an event to a Campaign host.
public enum DeliveryOutcome: Sendable, Hashable {
    /// The host answered exactly 200.
    case delivered
    /// Worth retrying: a transport error, a timeout, or a status of
    /// ``UploadConfiguration/retryStatuses``. The delay the host asked for (`Retry-After`), if any;
    /// the status and the start of the body when the host answered.
    case retryable(reason: String, retryAfter: Duration?, status: Int? = nil, body: String = "")
    /// A redirection (301, 302, 303, 307, 308) to `location`, from a sender that does not follow
    /// redirections itself; the event is sent again through one that does.
    case redirected(status: Int, location: String)
    /// Any other answer: the host will never accept it. The event goes to the dead-letter store.
    case rejected(status: Int, body: String)
    /// Never put on the wire: a batch stopped sending when the host started failing. Neither a
    /// retry nor a failure; the event is simply sent again.
    case notSent

    /// HTTP statuses retried by default; every other non-200 status is a permanent rejection
    /// (``UploadConfiguration/retryStatuses`` changes the set).
    public static let defaultRetryStatuses: Set<Int> = [408, 425, 429, 500, 502, 503, 504, 507]

    /// Statuses that redirect a request elsewhere.
    public static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Classifies an HTTP answer.
    public static func classify(
        status: Int, retryAfter: String?, body: String, now: Double, retryStatuses: Set<Int> = defaultRetryStatuses
    ) -> DeliveryOutcome {
        if status == 200 { return .delivered }
        if retryStatuses.contains(status) {
            return .retryable(reason: "HTTP \(status)", retryAfter: retryAfter.flatMap { RetryAfter.delay($0, now: now) }, status: status, body: body)
        }
        return .rejected(status: status, body: body)
    }
}

public import RelayCore
public import RelayIO

/// How the uploader forwards events.
public struct UploadConfiguration: Sendable, Hashable {
    /// Requests in flight at once to each host.
    public var concurrency: Int
    /// Whether the requests in flight to a host adapt to its answers (``AdaptiveConcurrency``), up
    /// to ``concurrency`` (the default); `false` (`--no-adaptive-concurrency`): always ``concurrency``.
    public var adaptiveConcurrency = true
    /// How long one request may take.
    public var requestTimeout: Duration
    /// Retry delays.
    public var backoff: Backoff
    /// Retryable failures in a row that make the uploader stop sending and probe instead.
    public var breakerThreshold: Int
    /// The most events sent beyond the durable cursor. After a crash at most this many events of a
    /// lane can be sent a second time: it is the duplicate bound.
    public var maximumUnsyncedEvents: Int
    /// Requests started per second to each host, at most (`max-rate`, ``RateCeiling``); `nil`: no ceiling.
    public var maximumRate: Int?
    /// Failed attempts after which an event goes to the dead-letter store with its last answer.
    /// Only failures while the host is otherwise answering count (its circuit breaker stays
    /// closed): an outage never uses up an event's attempts; ``maximumEventAge`` bounds those.
    public var maximumAttempts: Int
    /// An event whose time is older than this when an attempt fails goes to the dead-letter store.
    public var maximumEventAge: Duration
    /// HTTP statuses retried; any other answer but 200 (and redirections of tracking hits) is a
    /// permanent rejection.
    public var retryStatuses: Set<Int>
    /// Redirections followed for a tracking hit, as the SDKs' HTTP stacks do.
    public var maximumRedirects: Int
    /// How long a delivered registration suppresses an identical one for its token (JSON and file
    /// producers only: what an SDK posts was already deduplicated by the SDK and is forwarded).
    public var registrationDeduplicationWindow: Duration
    /// A PEM file of certificate authorities trusted for `https` hosts besides the system's.
    public var trustedCertificateAuthorities: String?
    /// The certificate presented to `https` hosts that ask for one (a central relay with
    /// `--tls-client-ca`); `nil` presents none.
    public var clientCertificate: UpstreamTLS.ClientCertificate?
    /// How the lanes' threads and the connections' event loop are scheduled. `serve` uses
    /// ``BlockingExecutor/Priority/background``, so forwarding a backlog never takes a core from
    /// request handling; a command that only uploads has nothing to yield to (the default).
    public var threadPriority: BlockingExecutor.Priority = .normal
    /// Asked before every request: on a log kept in PostgreSQL, whether this relay holds the
    /// stream's lease (``RelayCore/ForwardingPermit``); `nil` (the file log): always.
    public var forwardingPermit: ForwardingPermitReference?
    /// The stream the lanes read when it is not this relay's own: one forwarded for a relay that
    /// stopped, whose dead letters are kept under its name (``DeadLetterTable``); `nil`: the own.
    public var adoptedStream: String?

    /// The defaults: 8 concurrent requests per host, 30 s timeout (as the SDKs), backoff 100 ms
    /// doubling to 60 s, breaker after 5 failures, at most 4,096 events beyond the durable cursor,
    /// 20 attempts, 7 days, ``DeliveryOutcome/defaultRetryStatuses``, 3 redirections, dedup 7 days.
    public init(
        concurrency: Int = 8, requestTimeout: Duration = .seconds(30), backoff: Backoff = Backoff(), breakerThreshold: Int = 5,
        maximumUnsyncedEvents: Int = 4096, maximumRate: Int? = nil, maximumAttempts: Int = 20,
        maximumEventAge: Duration = .seconds(7 * 86_400), retryStatuses: Set<Int> = DeliveryOutcome.defaultRetryStatuses,
        maximumRedirects: Int = 3, registrationDeduplicationWindow: Duration = .seconds(7 * 86_400), trustedCertificateAuthorities: String? = nil
    ) {
        self.concurrency = max(1, concurrency)
        self.requestTimeout = requestTimeout
        self.backoff = backoff
        self.breakerThreshold = breakerThreshold
        self.maximumUnsyncedEvents = max(self.concurrency, maximumUnsyncedEvents)
        self.maximumRate = maximumRate
        self.maximumAttempts = max(1, maximumAttempts)
        self.maximumEventAge = maximumEventAge
        self.retryStatuses = retryStatuses
        self.maximumRedirects = max(0, maximumRedirects)
        self.registrationDeduplicationWindow = registrationDeduplicationWindow
        self.trustedCertificateAuthorities = trustedCertificateAuthorities
    }
}

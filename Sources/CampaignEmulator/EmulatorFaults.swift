/// Faults the emulator injects into answers to SDK requests (never into its own `/emulator/` API).
///
/// Checked in this order for each request: dropped connection, outages (503 + `Retry-After`),
/// rate limit (429), random failure (500), then latency, then the capacity (a full queue: 503, else
/// the wait for its turn), then unknown integration keys (400) and failing integration keys (500),
/// or redirections of hits.
public struct EmulatorFaults: Sendable, Hashable, Codable {
    /// Probability (0…1) that a request's connection is closed without an answer.
    public var dropRate: Double = 0
    /// Probability (0…1) that a request is answered with ``failureStatus``.
    public var failureRate: Double = 0
    /// The status of those random failures (default 500; 408, 425, 503… to test retries).
    public var failureStatus: Int?
    /// Answer 503 until this time (seconds since the Unix epoch), with a `Retry-After` header.
    public var unavailableUntil: Double?
    /// Answer 503, with a `Retry-After` header, for this many seconds from the first SDK request
    /// after these faults were set: an outage that starts when the client arrives, however long it
    /// takes to (``CampaignEmulator/outageStart`` tells when that was).
    public var unavailableSecondsFromFirstRequest: Double?
    /// The `Retry-After` seconds sent with 503 and 429 answers.
    public var retryAfterSeconds: Int?
    /// Send `Retry-After` as an HTTP-date instead of seconds.
    public var retryAfterAsDate: Bool = false
    /// More requests per second than this are answered 429.
    public var rateLimit: Double?
    /// Milliseconds to wait before answering.
    public var latencyMilliseconds: Int = 0
    /// When set, registrations with another integration key are answered 400 (the legacy SDK's
    /// "UnknownUUID" outcome).
    public var knownIntegrationKeys: [String]?
    /// Registrations with these integration keys are answered 500, every time: a poison request
    /// that must not hold back the others.
    public var failingIntegrationKeys: [String]?
    /// Each tracking hit is answered with this many `302 Found` redirections (to
    /// `/r/redirected/{n}/?id=…`) before the 200 that records it.
    public var redirectHits: Int?
    /// SDK requests the host serves per second, at most, as a server that falls behind: each one
    /// takes 1/capacity s of the one worker, in arrival order, so its answer waits for those ahead
    /// of it (the latency rises as the queue fills). `nil`: no limit.
    public var capacity: Double?
    /// With ``capacity``: places in its queue (requests waiting, beyond the one being served). A
    /// request that finds them all taken is answered 503 at once, without `Retry-After`, as a
    /// Tomcat whose accept queue is full. Default 100.
    public var queuePlaces: Int?

    /// No faults.
    public init() {}
}

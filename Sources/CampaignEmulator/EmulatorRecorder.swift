import RelayCore

/// What the emulator received, for tests and staging checks.
public actor EmulatorRecorder {
    /// A raw request as it arrived.
    public struct RawRequest: Sendable, Hashable, Codable {
        /// The HTTP method.
        public var method: String
        /// The request target, as sent (path and query).
        public var uri: String
        /// The header fields, in order, as sent.
        public var headers: [[String]]
        /// The body as text.
        public var body: String
        /// The status the emulator answered.
        public var status: Int
        /// Seconds since the Unix epoch when it arrived.
        public var time: Double
    }

    /// A tracking hit as Campaign would log it.
    public struct Hit: Sendable, Hashable, Codable {
        /// The message id as sent (hex or UUID).
        public var messageId: String
        /// The delivery id.
        public var deliveryId: String
        /// 1 received, 2 opened/clicked.
        public var tag: Int
    }

    private(set) var hitCounts: [Hit: Int] = [:]
    private(set) var totalHits = 0
    private(set) var registrations: [[String: String]] = []
    private var requests: [RawRequest] = []
    private var requestCount = 0
    /// How many raw requests are kept (the oldest are dropped).
    public let keptRequests: Int

    /// A recorder keeping the last `keptRequests` raw requests.
    public init(keptRequests: Int = 10_000) {
        self.keptRequests = keptRequests
    }

    func record(_ request: RawRequest) {
        requestCount += 1
        requests.append(request)
        if requests.count > keptRequests { requests.removeFirst(requests.count - keptRequests) }
    }

    func record(_ hit: Hit) {
        hitCounts[hit, default: 0] += 1
        totalHits += 1
    }

    func record(registration fields: [String: String]) {
        registrations.append(fields)
    }

    /// Forgets everything received.
    public func reset() {
        hitCounts = [:]
        totalHits = 0
        registrations = []
        requests = []
        requestCount = 0
    }

    /// Hits accepted (answered 200), counting repeats.
    public var acceptedHits: Int { totalHits }
    /// Distinct hits accepted.
    public var distinctHits: Int { hitCounts.count }
    /// Every distinct hit and how often it was accepted.
    public var hits: [Hit: Int] { hitCounts }
    /// Registrations accepted, as their decoded form fields.
    public var acceptedRegistrations: [[String: String]] { registrations }
    /// The last raw requests, oldest first.
    public func lastRequests(_ count: Int) -> [RawRequest] { Array(requests.suffix(count)) }
    /// Requests received, answered or not.
    public var receivedRequests: Int { requestCount }

    /// Accepted hits per delivery and tag.
    public var countsByDelivery: [String: [String: Int]] {
        var counts: [String: [String: Int]] = [:]
        for (hit, count) in hitCounts { counts[hit.deliveryId, default: [:]][String(hit.tag), default: 0] += count }
        return counts
    }
}

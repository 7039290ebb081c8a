import NIOConcurrencyHelpers
import RelayCore

/// What the emulator received, for tests and staging checks.
public final class EmulatorRecorder: Sendable {
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

    private struct State {
        var hitCounts: [Hit: Int] = [:]
        var totalHits = 0
        var registrations: [[String: String]] = []
        /// When each of ``registrations`` arrived, on this process's monotonic clock.
        var registrationArrivals: [ContinuousClock.Instant] = []
        var requests: [RawRequest] = []
        var requestCount = 0
        var overloaded = 0
        /// SDK requests accepted (answered 200) per second since the Unix epoch.
        var acceptedBySecond: [Int64: Int] = [:]
    }

    /// A lock, not an actor: the emulator records on every request, and an actor hop per request
    /// would make the emulator the bottleneck of drain benchmarks.
    private let state = NIOLockedValueBox(State())
    /// How many raw requests are kept (the oldest are dropped).
    public let keptRequests: Int

    /// A recorder keeping the last `keptRequests` raw requests.
    public init(keptRequests: Int = 10_000) {
        self.keptRequests = keptRequests
    }

    func record(_ request: RawRequest) {
        let kept = keptRequests
        state.withLockedValue { state in
            state.requestCount += 1
            guard kept > 0 else { return }
            state.requests.append(request)
            if state.requests.count > kept + kept / 2 { state.requests.removeFirst(state.requests.count - kept) }
        }
    }

    func record(_ hit: Hit, at time: Double) {
        state.withLockedValue { state in
            state.hitCounts[hit, default: 0] += 1
            state.totalHits += 1
            state.acceptedBySecond[Int64(time), default: 0] += 1
        }
    }

    func record(registration fields: [String: String], at time: Double) {
        state.withLockedValue { state in
            state.registrations.append(fields)
            state.registrationArrivals.append(.now)
            state.acceptedBySecond[Int64(time), default: 0] += 1
        }
    }

    /// A request answered 503 because the queue of the emulator's capacity was full.
    func recordOverloaded() {
        state.withLockedValue { $0.overloaded += 1 }
    }

    /// Forgets everything received.
    public func reset() async {
        state.withLockedValue { $0 = State() }
    }

    /// Hits accepted (answered 200), counting repeats.
    public var acceptedHits: Int { get async { state.withLockedValue { $0.totalHits } } }
    /// Distinct hits accepted.
    public var distinctHits: Int { get async { state.withLockedValue { $0.hitCounts.count } } }
    /// Every distinct hit and how often it was accepted.
    public var hits: [Hit: Int] { get async { state.withLockedValue { $0.hitCounts } } }
    /// Registrations accepted, as their decoded form fields.
    public var acceptedRegistrations: [[String: String]] { get async { state.withLockedValue { $0.registrations } } }
    /// Registrations accepted, each with when it arrived on this process's monotonic clock: two
    /// emulators in one process can be put in one order of arrival (spare hosts).
    public var registrationArrivals: [(fields: [String: String], arrived: ContinuousClock.Instant)] {
        get async { state.withLockedValue { Array(zip($0.registrations, $0.registrationArrivals)) } }
    }
    /// The last raw requests, oldest first.
    public func lastRequests(_ count: Int) async -> [RawRequest] { state.withLockedValue { Array($0.requests.suffix(count)) } }
    /// Requests received, answered or not.
    public var receivedRequests: Int { get async { state.withLockedValue { $0.requestCount } } }
    /// Requests answered 503 because the queue of the emulator's capacity was full.
    public var overloadedRequests: Int { get async { state.withLockedValue { $0.overloaded } } }
    /// SDK requests accepted (hits and registrations answered 200) in each second since the Unix
    /// epoch that had any: what the host took in any one second.
    public var acceptedBySecond: [Int64: Int] { get async { state.withLockedValue { $0.acceptedBySecond } } }

    /// Accepted hits per delivery and tag.
    public var countsByDelivery: [String: [String: Int]] {
        get async {
            var counts: [String: [String: Int]] = [:]
            for (hit, count) in state.withLockedValue({ $0.hitCounts }) { counts[hit.deliveryId, default: [:]][String(hit.tag), default: 0] += count }
            return counts
        }
    }
}

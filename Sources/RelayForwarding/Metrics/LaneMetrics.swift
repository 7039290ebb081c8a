public import CoreMetrics
import RelayCore

/// The metrics one forwarding lane records, at the moment things happen: swift-metrics handles,
/// made by whoever builds the lane with a factory of its choice.
///
/// A lane increments ``delivered`` and ``retries`` next to its own statistics, and records its
/// gauges wherever their value changes: ``backlog`` when its position or the end it works towards
/// moves, ``oldestUnsent`` when the oldest event it owes changes, ``unreachable`` when its
/// destination starts or stops failing. Nothing polls a lane for them.
///
/// ``oldestUnsent`` and ``unreachable`` record *times*, not ages: an age grows while nothing
/// happens, so a lane records when, and whoever reads the metrics turns that into an age as of
/// the moment it reads (the server's `relay_upload_oldest_unsent_seconds` and
/// `relay_upstream_unreachable_seconds`, `docs/metrics.md`). A time is in nanoseconds since the
/// Unix epoch (``RelayCore/EventTime/nanosecondsSinceEpoch``), and 0 means none (an event dated
/// exactly 1970-01-01T00:00:00Z reads as none).
///
/// The handles never touch swift-metrics' global `MetricsSystem`: several servers share one test
/// process, each with its own registry. ``none`` records nothing (`upload`, `replay`, tests).
public struct LaneMetrics: Sendable {
    /// Events the destination accepted, incremented as each is delivered (by the number of events a
    /// batch carried, for a batch).
    public let delivered: Counter
    /// Retries after retryable failures, incremented at each failure that will be retried.
    public let retries: Counter
    /// Events of the log the lane has not finished: the end it works towards minus its position.
    public let backlog: Gauge
    /// The event time of the oldest event the lane still owes (read, not yet delivered,
    /// dead-lettered or handed on), in nanoseconds since the Unix epoch; 0 when it owes none.
    public let oldestUnsent: Gauge
    /// Since when the destination has not answered, in nanoseconds since the Unix epoch; 0 while
    /// it answers. `nil` when the lane's destination has no such gauge (the Campaign hosts').
    public let unreachable: Gauge?
    /// 1 while the destination is failing (the circuit breaker is not closed), 0 while it answers;
    /// `nil` when nothing records it.
    public let breakerOpen: Gauge?
    /// What each host of the lane's destination reports (its ``ConcurrencyLimiter`` and its
    /// breaker), by the host's URL; empty when nothing records it.
    public let hosts: [String: Host]

    /// The handles of one host of a lane's destination.
    public struct Host: Sendable {
        /// The requests in flight the destination's answers allow now; recorded at each window's end.
        public var limit: Gauge
        /// The mean round trip of the last window with answers, in seconds.
        public var roundTrip: Gauge
        /// The moving average of the windows' means each is compared with, in seconds.
        public var baseline: Gauge
        /// The rate ceiling (`max-rate`), 0 without one; recorded once.
        public var maximumRate: Gauge
        /// Requests that waited for the rate ceiling before they started.
        public var paced: Counter
        /// 1 while the host's breaker is not closed (it gets only probes), 0 while it is.
        public var breakerOpen: Gauge

        /// The handles.
        public init(limit: Gauge, roundTrip: Gauge, baseline: Gauge, maximumRate: Gauge, paced: Counter, breakerOpen: Gauge) {
            self.limit = limit
            self.roundTrip = roundTrip
            self.baseline = baseline
            self.maximumRate = maximumRate
            self.paced = paced
            self.breakerOpen = breakerOpen
        }

        /// Records the limit of `snapshot` and its round trips.
        func record(_ snapshot: ConcurrencyLimiter.Snapshot) {
            limit.record(snapshot.limit)
            maximumRate.record(snapshot.maximumRate ?? 0)
            if let roundTrip = snapshot.roundTrip { self.roundTrip.record(roundTrip.seconds) }
            if let baseline = snapshot.baseline { self.baseline.record(baseline.seconds) }
        }
    }

    /// Handles for a lane; `unreachable` only for a lane that reports it (the relay lane).
    public init(
        delivered: Counter, retries: Counter, backlog: Gauge, oldestUnsent: Gauge, unreachable: Gauge? = nil, breakerOpen: Gauge? = nil,
        hosts: [String: Host] = [:]
    ) {
        self.delivered = delivered
        self.retries = retries
        self.backlog = backlog
        self.oldestUnsent = oldestUnsent
        self.unreachable = unreachable
        self.breakerOpen = breakerOpen
        self.hosts = hosts
    }

    /// The same handles, with `more` hosts' besides (those it has already are kept).
    public func adding(hosts more: [String: Host]) -> LaneMetrics {
        LaneMetrics(
            delivered: delivered, retries: retries, backlog: backlog, oldestUnsent: oldestUnsent, unreachable: unreachable,
            breakerOpen: breakerOpen, hosts: hosts.merging(more) { kept, _ in kept })
    }

    /// Handles that record nothing: swift-metrics' no-op handler, made once. Recording through them
    /// is a call to an empty method; no registry, lock or allocation.
    public static let none: LaneMetrics = {
        let noop = NOOPMetricsHandler.instance
        return LaneMetrics(
            delivered: Counter(label: "delivered", dimensions: [], handler: noop, factory: noop),
            retries: Counter(label: "retries", dimensions: [], handler: noop, factory: noop),
            backlog: Gauge(label: "backlog", dimensions: [], aggregate: false, handler: noop, factory: noop),
            oldestUnsent: Gauge(label: "oldest-unsent", dimensions: [], aggregate: false, handler: noop, factory: noop),
            unreachable: nil
        )
    }()

    /// Records `time` (the oldest event the lane owes; `nil`: none) in ``oldestUnsent``.
    func record(oldestUnsent time: EventTime?) {
        oldestUnsent.record(time?.nanosecondsSinceEpoch ?? 0)
    }

    /// Records `time` (since when the destination fails; `nil`: it answers) in ``unreachable``.
    func record(unreachableSince time: EventTime?) {
        unreachable?.record(time?.nanosecondsSinceEpoch ?? 0)
    }
}

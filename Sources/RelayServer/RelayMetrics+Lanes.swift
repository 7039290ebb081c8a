import CoreMetrics
import NIOConcurrencyHelpers
import Prometheus
public import RelayForwarding

extension RelayMetrics {
    /// One lane's handles, and what the server reads back from them.
    struct LaneHandles: Sendable {
        /// What the lane records through.
        let metrics: LaneMetrics
        /// The lane's share of `relay_upload_delivered_total`; `nil` for the relay lane, which does not count there.
        let delivered: TalliedCounter?
        /// The lane's times, shown as ages when a scrape renders.
        let ages: [AgeGauge]
    }

    static let backlogHelp = "Events of the log the uploader has not finished, by lane."
    static let oldestUnsentHelp =
        "Age in seconds (by its event time) of the oldest event the destination is still owed: read for it and not delivered, dead-lettered or handed on yet; 0 when none is."

    /// The handles the lane named `name` records through (`tracking`, `marketing`, `relay`:
    /// `docs/metrics.md`), made the first time and the same ones after.
    ///
    /// The Campaign lanes count into the one `relay_upload_delivered_total` and
    /// `relay_upload_retries_total` series (the relay lane's hand-offs are not Campaign's
    /// acceptances, and never counted there); a lane's backlog is `relay_upload_backlog{lane=name}` and its oldest owed event
    /// `relay_upload_oldest_unsent_seconds{destination=name}`, shown as an age as of each scrape. The
    /// relay lane's oldest owed event shows in `relay_upstream_oldest_waiting_seconds` too (the same
    /// value), and it has `relay_upstream_unreachable_seconds`.
    ///
    /// The handles are swift-metrics' own, with this registry's series as their handlers (made here
    /// with their HELP texts, which `PrometheusMetricsFactory` would register empty) and a
    /// `PrometheusMetricsFactory` over this registry as their factory; nothing is bootstrapped
    /// globally. No lane destroys its handles: the series live as long as the registry.
    public func laneMetrics(for name: String) -> LaneMetrics {
        lanes.withLockedValue { lanes in
            if let made = lanes[name] { return made.metrics }
            let made = makeLane(name)
            lanes[name] = made
            return made.metrics
        }
    }

    /// Each lane's deliveries so far, by lane name (for the status page's rates).
    func deliveredByLane() -> [String: Int] {
        lanes.withLockedValue { lanes in lanes.compactMapValues { $0.delivered.map { Int($0.total) } } }
    }

    /// Writes every lane's ages as of `now` (nanoseconds since the Unix epoch).
    func showLaneAges(now: Int64) {
        for age in lanes.withLockedValue({ $0.values.flatMap(\.ages) }) { age.show(now: now) }
    }

    private func makeLane(_ name: String) -> LaneHandles {
        let factory = PrometheusMetricsFactory(registry: registry)
        let isRelay = name == CentralRelaySink.laneName
        // The relay lane counts neither deliveries nor retries in the uploader's families.
        let delivered = isRelay ? nil : TalliedCounter(countingInto: uploadDelivered)
        let noop = NOOPMetricsHandler.instance
        let backlog = registry.makeGauge(descriptor: .named("relay_upload_backlog", Self.backlogHelp), labels: [("lane", name)])
        let oldestSeries = registry.makeGauge(
            descriptor: .named("relay_upload_oldest_unsent_seconds", Self.oldestUnsentHelp), labels: [("destination", name)])
        // The relay's oldest owed event is `relay_upstream_oldest_waiting_seconds` too, the same value.
        let oldestUnsent = AgeGauge(showingIn: isRelay ? [oldestSeries, upstreamOldestWaiting] : [oldestSeries])
        let unreachable = isRelay ? AgeGauge(showingIn: [upstreamUnreachable]) : nil
        let metrics = LaneMetrics(
            delivered: delivered.map { CoreMetrics.Counter(label: "relay_upload_delivered_total", dimensions: [], handler: $0, factory: factory) }
                ?? CoreMetrics.Counter(label: "relay_upload_delivered_total", dimensions: [], handler: noop, factory: noop),
            retries: isRelay
                ? CoreMetrics.Counter(label: "relay_upload_retries_total", dimensions: [], handler: noop, factory: noop)
                : CoreMetrics.Counter(label: "relay_upload_retries_total", dimensions: [], handler: uploadRetries, factory: factory),
            backlog: CoreMetrics.Gauge(
                label: "relay_upload_backlog", dimensions: [("lane", name)], aggregate: false, handler: backlog, factory: factory),
            oldestUnsent: CoreMetrics.Gauge(
                label: "relay_upload_oldest_unsent_seconds", dimensions: [("destination", name)], aggregate: false, handler: oldestUnsent,
                factory: factory),
            unreachable: unreachable.map {
                CoreMetrics.Gauge(label: "relay_upstream_unreachable_seconds", dimensions: [], aggregate: false, handler: $0, factory: factory)
            }
        )
        return LaneHandles(metrics: metrics, delivered: delivered, ages: [oldestUnsent] + (unreachable.map { [$0] } ?? []))
    }
}

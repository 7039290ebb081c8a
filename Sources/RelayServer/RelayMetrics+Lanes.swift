import CoreMetrics
import NIOConcurrencyHelpers
import Prometheus
public import RelayCore
public import RelayForwarding

extension RelayMetrics {
    /// One lane's handles, and what the server reads back from them.
    struct LaneHandles: Sendable {
        /// What the lane records through.
        var metrics: LaneMetrics
        /// The lane's share of `relay_upload_delivered_total`; `nil` for the relay lane, which does not count there.
        let delivered: TalliedCounter?
        /// The lane's times, shown as ages when a scrape renders.
        let ages: [AgeGauge]
    }

    static let backlogHelp = "Events of the log the uploader has not finished, by lane (tracking, marketing, relay) and tenant."
    static let oldestUnsentHelp =
        "Age in seconds (by its event time) of the oldest event the destination is still owed: read for it and not delivered, dead-lettered or handed on yet; 0 when none is."
    static let breakerOpenHelp =
        "1 while the destination is failing (no host of it has its circuit breaker closed: sends pause, then probe), 0 while it answers; by lane and tenant."
    static let concurrencyLimitHelp =
        "Requests in flight the destination's host is allowed now, by lane, tenant and host: adaptive from 1 up to --concurrency (growing while its round trip stays near the baseline, halving on 429, 502-504, timeouts or a round trip past twice the baseline), or --concurrency with --no-adaptive-concurrency."
    static let roundTripHelp =
        "Mean round trip in seconds of the destination's answers in the last window (about one round trip), by lane, tenant and host; adaptive concurrency only."
    static let roundTripBaselineHelp =
        "The fastest window mean round trip in seconds of the last 10 s, which adaptive concurrency compares each window with; by lane, tenant and host."
    static let maximumRateHelp =
        "Requests started per second to the destination's host at most (max-rate), by lane, tenant and host; 0 without a ceiling."
    static let pacedHelp =
        "Requests to the destination's host that waited for the rate ceiling (max-rate) before they started, by lane, tenant and host: rising while the ceiling holds the drain back."
    static let hostBreakerOpenHelp =
        "1 while one host of the destination is failing (its own circuit breaker is open or half-open: it gets only probes, its spares carry its share), 0 while it answers; by lane, tenant and host."
    static let deliveredHelp = "Events Campaign accepted (HTTP 200), by tenant."
    static let retriesHelp = "Retries after retryable failures of forwarding to Campaign, by tenant."

    /// The handles the lane of `sink` records through: ``laneMetrics(for:tenant:adoptedStream:)``
    /// of its kind and tenant, for this relay's own log or for the stream it adopted.
    public func laneMetrics(for sink: any Sink, adoptedStream: String? = nil) -> LaneMetrics {
        laneMetrics(
            for: sink.kind, tenant: sink.tenant, adoptedStream: adoptedStream, hosts: (sink as? any EventSink)?.hosts.map(\.description) ?? [])
    }

    /// The handles the lane of `kind` (its label is the series' `lane` or `destination`:
    /// `tracking`, `marketing`, `relay`, `docs/metrics.md`) for `tenant` (`nil`: the default
    /// tenant's, or every tenant's) records through, made the first time and the same ones after.
    ///
    /// Every series carries `tenant` (``SinkKind/tenantLabel(_:)``: `*` for a kind that takes every
    /// tenant's events). The lanes of a kind that ``SinkKind/Role/delivers`` count into
    /// `relay_upload_delivered_total{tenant}` and `relay_upload_retries_total{tenant}`; those of a
    /// kind that ``SinkKind/Role/handsOn`` are never counted there (a hand-off is not Campaign's
    /// acceptance), and their oldest owed event shows in `relay_upstream_oldest_waiting_seconds`
    /// too (the same value), beside `relay_upstream_unreachable_seconds`. A lane's backlog is
    /// `relay_upload_backlog{lane,tenant}`, its oldest owed event
    /// `relay_upload_oldest_unsent_seconds{destination,tenant}`, shown as an age as of each
    /// scrape, and its breaker `relay_upload_breaker_open{lane,tenant}`.
    ///
    /// The handles are swift-metrics' own, with this registry's series as their handlers (made here
    /// with their HELP texts, which `PrometheusMetricsFactory` would register empty) and a
    /// `PrometheusMetricsFactory` over this registry as their factory; nothing is bootstrapped
    /// globally. No lane destroys its handles: the series live as long as the registry.
    ///
    /// The lanes of a stream this relay adopted (the log in PostgreSQL, `adoptedStream` its name)
    /// have series of their own, the same families with a `stream` label besides: its backlog and
    /// breaker are never written over by this relay's own lanes', and its deliveries are told apart.
    /// A relay lane's `relay_upstream_*` gauges stay this relay's own.
    ///
    /// Each of `hosts` (the URLs of an event sink's first host and spares) has handles of its own,
    /// its series labelled `host` besides: its limit, round trips, rate ceiling and breaker.
    public func laneMetrics(for kind: SinkKind, tenant: TenantName? = nil, adoptedStream: String? = nil, hosts: [String] = []) -> LaneMetrics {
        // One set of handles per lane: two would write the same series (its ages at each scrape).
        // A destination's hosts get theirs as a lane first names them (a reload may add one).
        let name = kind.laneName(of: tenant) + (adoptedStream.map { "@" + $0 } ?? "")
        return lanes.withLockedValue { lanes in
            var made = lanes[name] ?? makeLane(kind, tenant: tenant, adoptedStream: adoptedStream)
            let missing = kind.role == .handsOn ? [] : hosts.filter { made.metrics.hosts[$0] == nil }
            if !missing.isEmpty {
                let factory = PrometheusMetricsFactory(registry: registry)
                let stream = adoptedStream.map { [("stream", $0)] } ?? []
                made.metrics = made.metrics.adding(
                    hosts: Dictionary(
                        missing.map {
                            ($0, hostHandles(lane: kind.label, tenant: kind.tenantLabel(tenant), host: $0, stream: stream, factory: factory))
                        },
                        uniquingKeysWith: { first, _ in first }))
            }
            lanes[name] = made
            return made.metrics
        }
    }

    /// Each lane's deliveries so far, by lane name (`tracking`, `tracking_brand-a`; for the status
    /// page's rates).
    func deliveredByLane() -> [String: Int] {
        lanes.withLockedValue { lanes in lanes.compactMapValues { $0.delivered.map { Int($0.total) } } }
    }

    /// Writes every lane's ages as of `now` (nanoseconds since the Unix epoch).
    func showLaneAges(now: Int64) {
        for age in lanes.withLockedValue({ $0.values.flatMap(\.ages) }) { age.show(now: now) }
    }

    /// `relay_dead_letters{tenant}`: the dead letters of `tenant` (`nil`: the default tenant) not
    /// re-queued, set by the sampler.
    func deadLetters(tenant: TenantName?) -> Prometheus.Gauge {
        deadLetters(tenantLabel: tenant.displayName)
    }

    /// `relay_dead_letters{tenant}` by its label.
    func deadLetters(tenantLabel: String) -> Prometheus.Gauge {
        registry.makeGauge(
            descriptor: .named("relay_dead_letters", "Dead letters waiting in the store (not re-queued), by the tenant whose host refused them."),
            labels: [("tenant", tenantLabel)])
    }

    /// `relay_tenant_log_owed_bytes{tenant}` and `relay_tenant_log_limit_bytes{tenant}`: a tenant's
    /// share of the log, used and allowed.
    func recordTenantShare(_ tenant: TenantName, owedBytes: Int64, limitBytes: Int64) {
        registry.makeGauge(
            descriptor: .named(
                "relay_tenant_log_owed_bytes",
                "Bytes of a tenant's events (before compression) its hosts have not taken yet: what max-wal-bytes of [tenant.NAME] limits."),
            labels: [("tenant", tenant.text)]
        ).set(owedBytes)
        registry.makeGauge(
            descriptor: .named("relay_tenant_log_limit_bytes", "A tenant's share of the log (max-wal-bytes of [tenant.NAME])."),
            labels: [("tenant", tenant.text)]
        ).set(limitBytes)
    }

    private func makeLane(_ sinkKind: SinkKind, tenant: TenantName?, adoptedStream: String?) -> LaneHandles {
        let factory = PrometheusMetricsFactory(registry: registry)
        let kind = sinkKind.label
        let isRelay = sinkKind.role == .handsOn
        let tenantLabel = sinkKind.tenantLabel(tenant)
        let stream = adoptedStream.map { [("stream", $0)] } ?? []
        // A lane that hands events on counts neither deliveries nor retries in the uploader's families.
        let delivered =
            isRelay
            ? nil
            : TalliedCounter(
                countingInto: registry.makeCounter(
                    descriptor: .named("relay_upload_delivered_total", Self.deliveredHelp), labels: [("tenant", tenantLabel)] + stream))
        let noop = NOOPMetricsHandler.instance
        let backlog = registry.makeGauge(
            descriptor: .named("relay_upload_backlog", Self.backlogHelp), labels: [("lane", kind), ("tenant", tenantLabel)] + stream)
        let oldestSeries = registry.makeGauge(
            descriptor: .named("relay_upload_oldest_unsent_seconds", Self.oldestUnsentHelp),
            labels: [("destination", kind), ("tenant", tenantLabel)] + stream)
        let breakerOpen = registry.makeGauge(
            descriptor: .named("relay_upload_breaker_open", Self.breakerOpenHelp), labels: [("lane", kind), ("tenant", tenantLabel)] + stream)
        // A hand-off's oldest owed event is `relay_upstream_oldest_waiting_seconds` too, the same
        // value: this relay's own hand-off's only (those gauges have no labels to tell streams apart).
        let ownRelayLane = isRelay && adoptedStream == nil
        let oldestUnsent = AgeGauge(showingIn: ownRelayLane ? [oldestSeries, upstreamOldestWaiting] : [oldestSeries])
        let unreachable = ownRelayLane ? AgeGauge(showingIn: [upstreamUnreachable]) : nil
        let retries =
            isRelay
            ? nil
            : registry.makeCounter(descriptor: .named("relay_upload_retries_total", Self.retriesHelp), labels: [("tenant", tenantLabel)] + stream)
        let metrics = LaneMetrics(
            delivered: delivered.map { CoreMetrics.Counter(label: "relay_upload_delivered_total", dimensions: [], handler: $0, factory: factory) }
                ?? CoreMetrics.Counter(label: "relay_upload_delivered_total", dimensions: [], handler: noop, factory: noop),
            retries: retries.map { CoreMetrics.Counter(label: "relay_upload_retries_total", dimensions: [], handler: $0, factory: factory) }
                ?? CoreMetrics.Counter(label: "relay_upload_retries_total", dimensions: [], handler: noop, factory: noop),
            backlog: CoreMetrics.Gauge(
                label: "relay_upload_backlog", dimensions: [("lane", kind)], aggregate: false, handler: backlog, factory: factory),
            oldestUnsent: CoreMetrics.Gauge(
                label: "relay_upload_oldest_unsent_seconds", dimensions: [("destination", kind)], aggregate: false, handler: oldestUnsent,
                factory: factory),
            unreachable: unreachable.map {
                CoreMetrics.Gauge(label: "relay_upstream_unreachable_seconds", dimensions: [], aggregate: false, handler: $0, factory: factory)
            },
            breakerOpen: CoreMetrics.Gauge(
                label: "relay_upload_breaker_open", dimensions: [("lane", kind)], aggregate: false, handler: breakerOpen, factory: factory),
        )
        return LaneHandles(metrics: metrics, delivered: delivered, ages: [oldestUnsent] + (unreachable.map { [$0] } ?? []))
    }

    /// `relay_upload_concurrency_limit`, `relay_upload_round_trip_seconds`,
    /// `relay_upload_round_trip_baseline_seconds`, `relay_upload_max_rate`,
    /// `relay_upload_paced_requests_total` and `relay_upload_host_breaker_open` of one host of a
    /// lane that delivers.
    private func hostHandles(
        lane: String, tenant: String, host: String, stream: [(String, String)], factory: PrometheusMetricsFactory
    ) -> LaneMetrics.Host {
        let labels = [("lane", lane), ("tenant", tenant), ("host", host)] + stream
        func gauge(_ name: String, _ help: String) -> CoreMetrics.Gauge {
            CoreMetrics.Gauge(
                label: name, dimensions: [("lane", lane)], aggregate: false,
                handler: registry.makeGauge(descriptor: .named(name, help), labels: labels), factory: factory)
        }
        let paced = "relay_upload_paced_requests_total"
        return LaneMetrics.Host(
            limit: gauge("relay_upload_concurrency_limit", Self.concurrencyLimitHelp),
            roundTrip: gauge("relay_upload_round_trip_seconds", Self.roundTripHelp),
            baseline: gauge("relay_upload_round_trip_baseline_seconds", Self.roundTripBaselineHelp),
            maximumRate: gauge("relay_upload_max_rate", Self.maximumRateHelp),
            paced: CoreMetrics.Counter(
                label: paced, dimensions: [("lane", lane)], handler: registry.makeCounter(descriptor: .named(paced, Self.pacedHelp), labels: labels),
                factory: factory),
            breakerOpen: gauge("relay_upload_host_breaker_open", Self.hostBreakerOpenHelp)
        )
    }
}

import Metrics
public import Prometheus
import RelayLog

/// The server's Prometheus metrics, made through an explicit factory (no global bootstrap, so
/// several servers can run in one process, as in tests).
public final class RelayMetrics: Sendable {
    /// The registry `GET /metrics` renders.
    public let registry: PrometheusCollectorRegistry
    let eventsIngested: Metrics.Counter
    let registrationsIngested: Metrics.Counter
    let requestsAcknowledged: Metrics.Counter
    let requestsRejected: Metrics.Counter
    let requestsUnavailable: Metrics.Counter
    let fsyncDuration: Metrics.Timer
    let frameBytes: Metrics.Recorder
    let commitEvents: Metrics.Recorder
    let uploadBacklogTracking: Metrics.Gauge
    let uploadBacklogMarketing: Metrics.Gauge
    let uploadRetries: Metrics.Gauge
    let uploadDelivered: Metrics.Gauge
    let deadLetters: Metrics.Gauge
    let aggregatorLag: Metrics.Gauge
    let durableSequence: Metrics.Gauge
    private let factory: PrometheusMetricsFactory

    /// Metrics in a new registry.
    public init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(3),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(100), .seconds(1),
        ]
        factory.defaultValueHistogramBuckets = [64, 256, 1024, 4096, 16384, 65536, 262_144, 1_048_576, 4_194_304]
        self.registry = registry
        self.factory = factory
        eventsIngested = Metrics.Counter(label: "relay_events_ingested_total", dimensions: [("kind", "track")], factory: factory)
        registrationsIngested = Metrics.Counter(label: "relay_events_ingested_total", dimensions: [("kind", "register")], factory: factory)
        requestsAcknowledged = Metrics.Counter(label: "relay_requests_acknowledged_total", factory: factory)
        requestsRejected = Metrics.Counter(label: "relay_requests_rejected_total", factory: factory)
        requestsUnavailable = Metrics.Counter(label: "relay_requests_unavailable_total", factory: factory)
        fsyncDuration = Metrics.Timer(label: "relay_wal_fsync_seconds", factory: factory)
        frameBytes = Metrics.Recorder(label: "relay_wal_commit_bytes", aggregate: true, factory: factory)
        commitEvents = Metrics.Recorder(label: "relay_wal_commit_events", aggregate: true, factory: factory)
        uploadBacklogTracking = Metrics.Gauge(label: "relay_upload_backlog", dimensions: [("lane", "tracking")], factory: factory)
        uploadBacklogMarketing = Metrics.Gauge(label: "relay_upload_backlog", dimensions: [("lane", "marketing")], factory: factory)
        uploadRetries = Metrics.Gauge(label: "relay_upload_retries", factory: factory)
        uploadDelivered = Metrics.Gauge(label: "relay_upload_delivered", factory: factory)
        deadLetters = Metrics.Gauge(label: "relay_dead_letters", factory: factory)
        aggregatorLag = Metrics.Gauge(label: "relay_aggregator_lag_events", factory: factory)
        durableSequence = Metrics.Gauge(label: "relay_wal_durable_sequence", factory: factory)
    }

    /// The counter of registrations carrying the unknown form field `name`.
    func unknownFormField(_ name: String) -> Metrics.Counter {
        Metrics.Counter(label: "relay_sdk_unknown_fields_total", dimensions: [("field", name)], factory: factory)
    }

    func record(_ commit: CommitReport) {
        fsyncDuration.recordNanoseconds(Int64(commit.synchronizeDuration.components.seconds) * 1_000_000_000 + commit.synchronizeDuration.components.attoseconds / 1_000_000_000)
        frameBytes.record(commit.bytes)
        commitEvents.record(commit.events)
    }

    /// The Prometheus text exposition.
    public func render() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}

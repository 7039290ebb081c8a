import NIOConcurrencyHelpers
public import Prometheus
import RelayCore
public import RelayForwarding
import RelayLog

/// The server's Prometheus metrics, in a registry of their own (no global bootstrap, so several
/// servers can run in one process, as in tests).
///
/// Every family has `# HELP`; counters end in `_total`; the exposition lists families sorted by
/// name, so two scrapes compare line by line. `docs/metrics.md` lists them.
public final class RelayMetrics: Sendable {
    /// The registry `GET /metrics` renders.
    public let registry: PrometheusCollectorRegistry
    let eventsIngested: Counter
    let registrationsIngested: Counter
    let requestsAcknowledged: Counter
    let requestsRejected: Counter
    let requestsUnavailable: Counter
    let fsyncDuration: DurationHistogram
    let frameBytes: ValueHistogram
    let commitEvents: ValueHistogram
    /// `relay_upstream_unreachable_seconds` and `relay_upstream_oldest_waiting_seconds`, which the
    /// relay lane's handles show (``laneMetrics(for:)``).
    let upstreamUnreachable: Gauge
    let upstreamOldestWaiting: Gauge
    let aggregatorLag: Gauge
    /// Durable events not counted in the fleet's PostgreSQL yet (`serve --postgres-url`).
    let postgresLag: Gauge
    /// Failed attempts to count into PostgreSQL.
    let postgresErrors: Counter
    let lastDurableSequence: Gauge
    /// Machines an acknowledgement is on (``RelayPostgres/LogDurability``).
    let logCopies: Gauge
    let segmentsRemoved: [SegmentRemoval.Reason: Counter]
    let segmentBytesRemoved: [SegmentRemoval.Reason: Counter]
    let segmentsArchived: Counter
    let process = ProcessMetrics()
    /// Each lane's handles by lane name (`tracking`, `tracking_brand-a`, `relay`), made once
    /// (``laneMetrics(for:tenant:)``).
    let lanes = NIOLockedValueBox<[String: LaneHandles]>([:])
    /// The series of `relay_http_requests_total` and `relay_http_request_duration_seconds` made so
    /// far; bounded like their labels (matched route patterns, methods, statuses).
    private let requestSeries = NIOLockedValueBox<[RequestSeriesKey: (Counter, DurationHistogram)]>([:])

    private struct RequestSeriesKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    static let requestDurationBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(3), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(100), .seconds(1),
    ]

    /// Metrics in a new registry, with the lane series of each of `sinkKinds` (the relay's own
    /// kinds by default; `serve` adds those its sink lists hold) shown at 0 from the start.
    public init(version: String, sinkKinds: [SinkKind] = SinkKind.builtIn) {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        let ingested = "Events stored durably (acknowledged), by kind."
        eventsIngested = registry.makeCounter(descriptor: .named("relay_events_ingested_total", ingested), labels: [("kind", "track")])
        registrationsIngested = registry.makeCounter(descriptor: .named("relay_events_ingested_total", ingested), labels: [("kind", "register")])
        requestsAcknowledged = registry.makeCounter(
            descriptor: .named("relay_requests_acknowledged_total", "Ingest requests answered 200 after fdatasync."))
        requestsRejected = registry.makeCounter(
            descriptor: .named("relay_requests_rejected_total", "Ingest requests refused as invalid (400, 413, 415, 422); nothing of them stored."))
        requestsUnavailable = registry.makeCounter(
            descriptor: .named("relay_requests_unavailable_total", "Ingest requests answered 503 (log full, disk error, overload, stopping)."))
        fsyncDuration = registry.makeDurationHistogram(
            descriptor: .named("relay_wal_fsync_seconds", "Duration of each group commit's fdatasync."), buckets: Self.requestDurationBuckets)
        let sizeBuckets: [Double] = [64, 256, 1024, 4096, 16384, 65536, 262_144, 1_048_576, 4_194_304]
        frameBytes = registry.makeValueHistogram(
            descriptor: .named("relay_wal_commit_bytes", "Bytes written by each group commit."), buckets: sizeBuckets)
        commitEvents = registry.makeValueHistogram(
            descriptor: .named("relay_wal_commit_events", "Events in each group commit."), buckets: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536])
        upstreamUnreachable = registry.makeGauge(
            descriptor: .named(
                "relay_upstream_unreachable_seconds", "How long the central relay (--upstream-relay) has not answered; 0 while it answers."))
        upstreamOldestWaiting = registry.makeGauge(
            descriptor: .named(
                "relay_upstream_oldest_waiting_seconds", "Age of the oldest event not handed to the central relay yet; 0 when none waits."))
        aggregatorLag = registry.makeGauge(descriptor: .named("relay_aggregator_lag_events", "Durable events not counted in the aggregates yet."))
        postgresLag = registry.makeGauge(
            descriptor: .named("relay_postgres_lag_events", "Durable events not counted in the fleet's PostgreSQL yet (serve --postgres-url)."))
        postgresErrors = registry.makeCounter(
            descriptor: .named("relay_postgres_errors_total", "Failed attempts to count into the fleet's PostgreSQL; each is retried."))
        var removed: [SegmentRemoval.Reason: Counter] = [:]
        var removedBytes: [SegmentRemoval.Reason: Counter] = [:]
        for reason in SegmentRemoval.Reason.allCases {
            removed[reason] = registry.makeCounter(
                descriptor: .named(
                    "relay_wal_segments_removed_total",
                    "Segments every consumer had passed that left the log, by reason: expired (older than --retain) or quota (the log needed room: --retain-bytes or --max-wal-bytes)."
                ),
                labels: [("reason", reason.rawValue)])
            removedBytes[reason] = registry.makeCounter(
                descriptor: .named("relay_wal_segment_bytes_removed_total", "Bytes of the segments that left the log, by reason."),
                labels: [("reason", reason.rawValue)])
        }
        segmentsRemoved = removed
        segmentBytesRemoved = removedBytes
        segmentsArchived = registry.makeCounter(
            descriptor: .named("relay_wal_segments_archived_total", "Segments copied into --archive-dir before they left the log."))
        lastDurableSequence = registry.makeGauge(
            descriptor: .named("relay_wal_last_durable_sequence", "Sequence number of the newest durable event (0: the log is empty)."))
        logCopies = registry.makeGauge(
            descriptor: .named(
                "relay_log_copies",
                "Machines an acknowledgement is on: 1 for the file log, or PostgreSQL without a synchronous standby streaming; 1 plus the standbys a commit waits for."
            ))
        logCopies.set(Int64(1))
        registry.makeGauge(descriptor: .named("relay_build_info", "The relay's version; always 1."), labels: [("version", version)]).set(Int64(1))
        process.register(in: registry)
        // Every kind of destination's series, at 0 until a lane records: the ones the relay does
        // not forward to stay at 0.
        for kind in sinkKinds {
            _ = laneMetrics(for: kind)
        }
        deadLetters(tenant: nil).set(Int64(0))
    }

    /// Seconds from `time` to `now` (nanoseconds since the epoch); 0 without a time, or for an
    /// event time in the future.
    static func age(of time: EventTime?, now: Int64) -> Double {
        Double(time.map { max(0, now - $0.nanosecondsSinceEpoch) } ?? 0) / 1e9
    }

    /// Counts a batch another relay handed to this one (`POST /v1/relay/batches`), by sending relay
    /// and answer (`appended`, `already_stored`, `gap`, `stale_epoch`), and the events it appended.
    func recordRelayBatch(from relayID: String, answer: String, appended: Int) {
        registry.makeCounter(
            descriptor: .named("relay_received_batches_total", "Batches other relays handed to this one, by sending relay and answer."),
            labels: [("relay", relayID), ("answer", answer)]
        ).increment()
        guard appended > 0 else { return }
        registry.makeCounter(
            descriptor: .named("relay_received_events_total", "Events other relays handed to this one and it appended, by sending relay."),
            labels: [("relay", relayID)]
        ).increment(by: Int64(appended))
    }

    /// The counter of registrations carrying the unknown form field `name`.
    func unknownFormField(_ name: String) -> Counter {
        registry.makeCounter(
            descriptor: .named(
                "relay_sdk_unknown_fields_total",
                "Registrations from an SDK carrying a form field the relay does not know (accepted and forwarded), by field name."),
            labels: [("field", name)])
    }

    /// Counts one HTTP request of `route` (the matched path pattern) and its duration.
    func recordRequest(route: String, method: String, status: Int, duration: Duration) {
        let key = RequestSeriesKey(route: route, method: method, status: status)
        // The registry validates names and help texts and hashes the labels on every `make…`: a
        // measurable share of a single tracking hit's CPU, so each series is made once and kept.
        let (count, durations) = requestSeries.withLockedValue { series in
            if let known = series[key] { return known }
            let made = (
                registry.makeCounter(
                    descriptor: .named("relay_http_requests_total", "HTTP requests answered, by route, method and status."),
                    labels: [("route", route), ("method", method), ("status", String(status))]
                ),
                registry.makeDurationHistogram(
                    descriptor: .named("relay_http_request_duration_seconds", "Time from a request's arrival to its answer, by route."),
                    labels: [("route", route)], buckets: Self.requestDurationBuckets
                )
            )
            series[key] = made
            return made
        }
        count.increment()
        durations.record(duration)
    }

    /// Counts segments the log's retention removed, by reason, and those archived first.
    func record(_ removals: [SegmentRemoval]) {
        for removal in removals {
            segmentsRemoved[removal.reason]?.increment()
            segmentBytesRemoved[removal.reason]?.increment(by: removal.bytes)
            if removal.archived { segmentsArchived.increment() }
        }
    }

    func record(_ commit: CommitReport) {
        fsyncDuration.record(commit.synchronizeDuration)
        frameBytes.record(Double(commit.bytes))
        commitEvents.record(Double(commit.events))
    }

    /// The Prometheus text exposition, families sorted by name; the lanes' ages as of now.
    public func render() -> [UInt8] {
        showLaneAges(now: EventTime.now().nanosecondsSinceEpoch)
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return PrometheusExposition.sortedByFamily(buffer)
    }
}

extension MetricNameDescriptor {
    /// A descriptor whose `name` is exactly `name` (the unit is part of it), with `help`.
    static func named(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}

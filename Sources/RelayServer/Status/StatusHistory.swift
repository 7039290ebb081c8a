import NIOConcurrencyHelpers

/// What the status page shows as rates and recent latencies: a sample a second of the log's
/// durable end and of each destination's delivered total, and the fdatasync durations of the last
/// minute. Written by the metrics sampler and the log's commit observer; read by `GET /v1/status`.
final class StatusHistory: Sendable {
    /// One second's sample.
    struct Sample: Sendable {
        var at: ContinuousClock.Instant
        var durable: UInt64
        var delivered: [String: Int]
    }

    private struct State {
        var samples: [Sample] = []
        var syncs: [(at: ContinuousClock.Instant, seconds: Double)] = []
    }

    /// fdatasync durations kept at most: a minute of 2,000 commits a second, about 2 MB.
    static let maximumSyncs = 120_000
    private let state = NIOLockedValueBox(State())

    /// Records the durable end and the destinations' delivered totals now; keeps a minute.
    func record(durable: UInt64, delivered: [String: Int], now: ContinuousClock.Instant = .now) {
        state.withLockedValue { state in
            state.samples.append(Sample(at: now, durable: durable, delivered: delivered))
            if state.samples.count > 61 { state.samples.removeFirst(state.samples.count - 61) }
        }
    }

    /// Records one group commit's fdatasync.
    func recordSync(_ duration: Duration, now: ContinuousClock.Instant = .now) {
        state.withLockedValue { state in
            state.syncs.append((now, Double(duration.nanoseconds) / 1e9))
            // Dropped in chunks, so the array is not shifted on every commit.
            if state.syncs.count > Self.maximumSyncs + Self.maximumSyncs / 4 {
                state.syncs.removeFirst(state.syncs.count - Self.maximumSyncs)
            }
        }
    }

    /// Events made durable per second, and each destination's deliveries per second, over the
    /// last `window` of samples; `nil` until two samples exist.
    func rates(over window: Duration = .seconds(10), now: ContinuousClock.Instant = .now) -> (
        intake: Double?, delivered: [String: Double]
    ) {
        state.withLockedValue { state in
            guard let last = state.samples.last,
                let first = state.samples.first(where: { now - $0.at <= window + .milliseconds(500) }) ?? state.samples.first,
                last.at > first.at
            else { return (nil, [:]) }
            let seconds = Double((last.at - first.at).nanoseconds) / 1e9
            var delivered: [String: Double] = [:]
            for (name, total) in last.delivered {
                delivered[name] = Double(max(0, total - (first.delivered[name] ?? 0))) / seconds
            }
            return (Double(last.durable - min(last.durable, first.durable)) / seconds, delivered)
        }
    }

    /// The median and 99th percentile of the fdatasyncs of the last minute, and how many there were.
    func syncPercentiles(now: ContinuousClock.Instant = .now) -> (p50: Double?, p99: Double?, count: Int) {
        let recent = state.withLockedValue { state in
            state.syncs.filter { now - $0.at <= .seconds(60) }.map(\.seconds)
        }.sorted()
        guard !recent.isEmpty else { return (nil, nil, 0) }
        let rank = { (quantile: Double) in recent[min(recent.count - 1, Int((quantile * Double(recent.count)).rounded(.up)) - 1)] }
        return (rank(0.5), rank(0.99), recent.count)
    }
}

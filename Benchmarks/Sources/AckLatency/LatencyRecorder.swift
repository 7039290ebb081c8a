import Synchronization

/// Ack latencies collected from many concurrent appends, and their percentiles.
final class LatencyRecorder: Sendable {
    private let samples = Mutex<[UInt64]>([])

    /// Records one latency in nanoseconds.
    func record(_ nanoseconds: UInt64) {
        samples.withLock { $0.append(nanoseconds) }
    }

    /// The percentiles of everything recorded so far.
    func summary() -> LatencySummary {
        LatencySummary(samples.withLock { $0 })
    }
}

/// Percentiles of a set of latencies, in milliseconds.
struct LatencySummary: Sendable {
    let count: Int
    let p50: Double
    let p99: Double
    let p999: Double
    let max: Double

    init(_ nanoseconds: [UInt64]) {
        let sorted = nanoseconds.sorted()
        count = sorted.count
        func percentile(_ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            // Nearest rank: the smallest sample with at least `fraction` of all samples at or below it.
            let rank = Int((fraction * Double(sorted.count)).rounded(.up))
            return Double(sorted[Swift.max(0, Swift.min(sorted.count - 1, rank - 1))]) / 1e6
        }
        p50 = percentile(0.5)
        p99 = percentile(0.99)
        p999 = percentile(0.999)
        max = Double(sorted.last ?? 0) / 1e6
    }
}

import CoreMetrics
import RelayCore
import Synchronization

/// A gauge handler that keeps the time a lane records and shows that time's age, in seconds, in the
/// gauges it feeds when the metrics are read.
///
/// An age grows while nothing happens, so a lane could not keep one current without a clock of its
/// own; it records *when* instead (``RelayForwarding/LaneMetrics/oldestUnsent``,
/// ``RelayForwarding/LaneMetrics/unreachable``: nanoseconds since the Unix epoch, 0 for none), and
/// ``show(now:)``, called as a scrape renders, writes the age as of that scrape: 0 for none, and 0
/// for a time in the future (``RelayMetrics/age(of:now:)``).
final class AgeGauge: RecorderHandler, Sendable {
    /// The recorded time, nanoseconds since the Unix epoch; 0: none.
    private let time = Atomic<Int64>(0)
    /// The gauges the age is written to: the same age in each.
    private let shown: [any RecorderHandler]

    /// A handler whose age goes to every gauge of `shown`.
    init(showingIn shown: [any RecorderHandler]) {
        self.shown = shown
    }

    /// Records a time in nanoseconds since the Unix epoch (0: none).
    func record(_ value: Int64) {
        time.store(value, ordering: .relaxed)
    }

    /// Records a time in nanoseconds since the Unix epoch (0, or a value no `Int64` holds: none).
    func record(_ value: Double) {
        record(Int64(exactly: value.rounded()) ?? 0)
    }

    /// Writes the recorded time's age as of `now` (nanoseconds since the Unix epoch) to the gauges.
    func show(now: Int64) {
        let recorded = time.load(ordering: .relaxed)
        let age = recorded == 0 ? 0 : RelayMetrics.age(of: EventTime(nanosecondsSinceEpoch: recorded), now: now)
        for gauge in shown { gauge.record(age) }
    }
}

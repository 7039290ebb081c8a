import CoreMetrics
import Synchronization

/// A counter handler that counts into a series other handlers may count into too, and keeps its own
/// total, so one lane's count can be read back from a series all lanes share.
///
/// `relay_upload_delivered_total` has no lane label, yet the status page shows each destination's
/// deliveries per second: each lane's handle is one of these over the one series, and
/// ``RelayMetrics/deliveredByLane()`` reads their totals.
final class TalliedCounter: CounterHandler, Sendable {
    private let tally = Atomic<Int64>(0)
    /// The series counted into.
    private let counter: any CounterHandler

    /// A handler counting into `counter`, from 0.
    init(countingInto counter: any CounterHandler) {
        self.counter = counter
    }

    /// What this handler has counted.
    var total: Int64 { tally.load(ordering: .relaxed) }

    /// Counts `amount` into the series and into this handler's total.
    func increment(by amount: Int64) {
        tally.wrappingAdd(amount, ordering: .relaxed)
        counter.increment(by: amount)
    }

    /// Sets this handler's total back to 0. The shared series is left as it is: it holds other
    /// handlers' counts, which a reset of this one cannot take back.
    func reset() {
        tally.store(0, ordering: .relaxed)
    }
}

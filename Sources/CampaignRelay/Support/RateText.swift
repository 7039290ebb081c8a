/// A rate of events per second as the commands' summaries and progress lines print it.
enum RateText {
    /// `count` events over `seconds` as "N events/s": whole numbers from 100 on (what scripts
    /// read, e.g. Benchmarks/aggregate.sh), three significant digits below (`12.3`, `0.500`), so
    /// that a slow or short run never reads "0 events/s". `nil` when there is no rate to speak
    /// of: no event, or a run too short to time (under a millisecond); the summary then shows
    /// the elapsed time alone.
    static func events(_ count: Int, seconds: Double) -> String? {
        guard count > 0, seconds >= 0.001 else { return nil }
        return "\(number(Double(count) / seconds)) events/s"
    }

    /// `value` (positive) with three significant digits, whole from 100 on.
    static func number(_ value: Double) -> String {
        guard value < 99.95 else { return String(Int(value.rounded())) }
        // Digits after the point for three significant ones: 1 for 12.3, 2 for 1.23, 3 for 0.123.
        var decimals = 1
        var scale = 10
        var bound = 10.0
        while value < bound, decimals < 9 {
            decimals += 1
            scale *= 10
            bound /= 10
        }
        let scaled = Int((value * Double(scale)).rounded())
        let fraction = String(scaled % scale)
        return "\(scaled / scale)." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }
}

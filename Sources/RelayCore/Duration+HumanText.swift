extension Duration {
    /// The duration as a person reads it, in the notation of the relay's duration options
    /// (`--retain 36h`, `--max-event-age 7d`): `0.4ms`, `250ms`, `1.66s`, `2m5s`, `1h30m`, `3d4h`.
    ///
    /// Below a minute it keeps three significant digits (`1.66s`, `12.3s`, `250ms`; below a
    /// millisecond, whole microseconds: `0.412ms`); from a minute on, whole seconds, then whole
    /// minutes from an hour, whole hours from a day, leaving out a part that is zero (`2m`, `1h`).
    /// Each value is rounded to the nearest, and a value that rounds up to the next unit is written
    /// in it (`59.96s` is `1m`). A negative duration is written with a `-`. `Duration`'s own
    /// description (`1.660393325 seconds`) is for programs; log lines and messages use this one,
    /// so that every duration a person reads is written the same way.
    public var humanText: String {
        let signed = nanoseconds
        let text = Self.humanText(nanoseconds: signed.magnitude)
        return signed < 0 ? "-" + text : text
    }

    /// Nanoseconds per millisecond, second, minute, hour and day.
    private static let millisecond: UInt64 = 1_000_000
    private static let second: UInt64 = 1_000_000_000
    private static let minute: UInt64 = 60 * second
    private static let hour: UInt64 = 60 * minute
    private static let day: UInt64 = 24 * hour

    /// The steps below a minute: a unit, how many decimals of it are written, and the value (in
    /// that unit) the step stops below. Three significant digits each, so a step's rounded value
    /// that reaches its bound is written by the next step.
    private static let fractionalSteps: [(unit: UInt64, suffix: String, decimals: Int, bound: UInt64)] = [
        (millisecond, "ms", 3, 1), (millisecond, "ms", 2, 10), (millisecond, "ms", 1, 100), (millisecond, "ms", 0, 1000),
        (second, "s", 2, 10), (second, "s", 1, 60),
    ]

    private static func humanText(nanoseconds: UInt64) -> String {
        if nanoseconds == 0 { return "0s" }
        for step in fractionalSteps where nanoseconds <= step.bound * step.unit {
            let scale = power(of: 10, step.decimals)
            // Within a minute, times at most 1,000: far from overflowing.
            let scaled = (nanoseconds * scale + step.unit / 2) / step.unit
            guard scaled < step.bound * scale else { continue }
            return decimal(scaled, decimals: step.decimals, scale: scale) + step.suffix
        }
        let seconds = rounded(nanoseconds, to: second)
        if seconds < 3600 { return parts(seconds / 60, "m", seconds % 60, "s") }
        let minutes = rounded(nanoseconds, to: minute)
        if minutes < 24 * 60 { return parts(minutes / 60, "h", minutes % 60, "m") }
        let hours = rounded(nanoseconds, to: hour)
        return parts(hours / 24, "d", hours % 24, "h")
    }

    /// `value` in whole `unit`s, rounded to the nearest (without overflowing near `UInt64.max`).
    private static func rounded(_ value: UInt64, to unit: UInt64) -> UInt64 {
        value / unit + (value % unit >= unit - unit / 2 ? 1 : 0)
    }

    /// `2m5s`, or `2m` when the second part is zero.
    private static func parts(_ major: UInt64, _ majorSuffix: String, _ minor: UInt64, _ minorSuffix: String) -> String {
        "\(major)\(majorSuffix)" + (minor == 0 ? "" : "\(minor)\(minorSuffix)")
    }

    /// `scaled / scale` with `decimals` decimals, trailing zeros (and a bare point) left out.
    private static func decimal(_ scaled: UInt64, decimals: Int, scale: UInt64) -> String {
        let whole = "\(scaled / scale)"
        guard decimals > 0 else { return whole }
        var fraction = String(scaled % scale)
        fraction = String(repeating: "0", count: decimals - fraction.count) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        return fraction.isEmpty ? whole : whole + "." + fraction
    }

    private static func power(of base: UInt64, _ exponent: Int) -> UInt64 {
        (0..<exponent).reduce(1) { product, _ in product * base }
    }
}

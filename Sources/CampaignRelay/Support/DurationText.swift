import RelayCore

/// Durations as an operator writes them: a number and a unit, `7d`, `12h`, `90m`, `45s`, `250ms`,
/// or several together (`1h30m`).
enum DurationText {
    /// The duration `text` names; `nil` when it is not of that form.
    static func parse(_ text: String) -> Duration? {
        var total = Duration.zero
        var rest = Substring(text.trimmingCharacters(in: " "))
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !digits.isEmpty, let value = Double(digits), value.isFinite, value >= 0 else { return nil }
            rest = rest.dropFirst(digits.count)
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            let seconds: Double
            switch unit {
            case "ms": seconds = value / 1000
            case "s": seconds = value
            case "m": seconds = value * 60
            case "h": seconds = value * 3600
            case "d": seconds = value * 86_400
            default: return nil
            }
            guard seconds < 1e12 else { return nil }
            total += .milliseconds(Int64((seconds * 1000).rounded()))
        }
        return total
    }
}

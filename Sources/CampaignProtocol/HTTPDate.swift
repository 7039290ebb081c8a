import RelayCore

/// HTTP's date format, RFC 9110's IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`): the `Date` header
/// of the relay's answers and a `Retry-After` given as a date (which ``RetryAfter`` reads).
public enum HTTPDate {
    static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The IMF-fixdate of the second `seconds` after the Unix epoch.
    public static func text(secondsSinceEpoch seconds: Int64) -> String {
        // 2026-11-21T10:00:00Z
        let utf8 = Array(EventTime(nanosecondsSinceEpoch: seconds * 1_000_000_000, utcOffsetMinutes: nil, fractionDigits: 0).rfc3339.utf8)
        func number(_ range: Range<Int>) -> Int { Int(String(decoding: utf8[range], as: UTF8.self)) ?? 0 }
        // 1970-01-01 was a Thursday.
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        let day = number(8..<10)
        let month = months[max(0, min(11, number(5..<7) - 1))]
        let clock = String(decoding: utf8[11..<19], as: UTF8.self)
        return "\(weekday), \(day < 10 ? "0" : "")\(day) \(month) \(number(0..<4)) \(clock) GMT"
    }
}

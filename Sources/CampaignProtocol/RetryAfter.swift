import RelayCore

/// Reads an HTTP `Retry-After` header in both of its forms: delay-seconds (`120`) and HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`, also the obsolete RFC 850 and asctime forms).
public enum RetryAfter {
    /// The longest delay honoured; a larger one (or a date further away) is capped here.
    public static let maximum = Duration.seconds(3600)

    /// The delay `value` asks for, measured from `now` (seconds since the Unix epoch) for dates;
    /// `nil` when the value is neither form. A date in the past means no delay.
    public static func delay(_ value: String, now: Double) -> Duration? {
        let text = value.trimmingSpaces()
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard let seconds = Int64(text) else { return maximum }
            return min(.seconds(seconds), maximum)
        }
        guard let date = parseHTTPDate(text) else { return nil }
        let seconds = max(0, date - now)
        return min(.milliseconds(Int64(seconds * 1000)), maximum)
    }

    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since the Unix epoch of an HTTP-date, or `nil`.
    public static func parseHTTPDate(_ text: String) -> Double? {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        var day: Int?
        var month: Int?
        var year: Int?
        var time: [Int]?
        switch parts.count {
        case 4 where parts[3] == "GMT" && parts[1].contains("-"):
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let date = parts[1].split(separator: "-").map(String.init)
            guard date.count == 3 else { return nil }
            day = Int(date[0])
            month = months.firstIndex(of: date[1].lowercased())
            year = Int(date[2]).map { $0 < 70 ? 2000 + $0 : ($0 < 100 ? 1900 + $0 : $0) }
            time = parseTime(parts[2])
        case 6 where parts[5] == "GMT":
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            day = Int(parts[1])
            month = months.firstIndex(of: parts[2].lowercased())
            year = Int(parts[3])
            time = parseTime(parts[4])
        case 5:
            // asctime: Sun Nov  6 08:49:37 1994
            month = months.firstIndex(of: parts[1].lowercased())
            day = Int(parts[2])
            time = parseTime(parts[3])
            year = Int(parts[4])
        default:
            return nil
        }
        guard let day, let month, let year, let time, (1...31).contains(day), (1970...9999).contains(year) else { return nil }
        let days = EventTime.days(fromCivilYear: Int64(year), month: Int64(month + 1), day: Int64(day))
        return Double(days * 86_400 + Int64(time[0] * 3600 + time[1] * 60 + time[2]))
    }

    private static func parseTime(_ text: String) -> [Int]? {
        // Digits only: `Int` alone would take "-222222226" as an hour (found by the retry-after
        // fuzz target: a date read as 25,000 years before 1970).
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }) else { return nil }
        let fields = parts.compactMap { Int($0) }
        guard fields.count == 3, fields[0] < 24, fields[1] < 60, fields[2] < 61 else { return nil }
        return fields
    }
}

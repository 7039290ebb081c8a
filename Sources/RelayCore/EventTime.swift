#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// When an event happened: an instant, plus how it was written, so the log reproduces it exactly.
///
/// The relay accepts RFC 3339 timestamps (`2026-11-21T10:00:00Z`, `2026-11-21T12:00:00.5+02:00`),
/// keeps the instant with nanosecond precision, and remembers the UTC offset and the number of
/// fractional digits it was given so that `wal dump` prints the same text back (lower-case `t`
/// and `z` come back upper-case, and the offset `-00:00` comes back as `+00:00`: the same instant).
public struct EventTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Nanoseconds since 1970-01-01T00:00:00Z (the instant, independent of the offset).
    public var nanosecondsSinceEpoch: Int64
    /// The UTC offset the time was written with, in minutes; `nil` means it was written with `Z`.
    public var utcOffsetMinutes: Int16?
    /// How many fractional-second digits were written (0 to 9).
    public var fractionDigits: UInt8

    /// Creates a time from its parts; `fractionDigits` is clamped to 0...9.
    public init(nanosecondsSinceEpoch: Int64, utcOffsetMinutes: Int16? = nil, fractionDigits: UInt8 = 3) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
        self.utcOffsetMinutes = utcOffsetMinutes
        self.fractionDigits = min(fractionDigits, 9)
    }

    /// The current wall-clock time in UTC, to the millisecond (the default time of an ingested event).
    public static func now() -> EventTime {
        let millis = SystemClock.wallNanoseconds() / 1_000_000
        return EventTime(nanosecondsSinceEpoch: millis * 1_000_000, utcOffsetMinutes: nil, fractionDigits: 3)
    }

    public static func < (lhs: EventTime, rhs: EventTime) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }

    /// The RFC 3339 text of this time, with its own offset and fractional digits.
    public var description: String { rfc3339 }

    /// The RFC 3339 text of this time, with its own offset and fractional digits.
    public var rfc3339: String {
        let offsetSeconds = Int64(utcOffsetMinutes ?? 0) * 60
        let (seconds, nanos) = Self.floorDivide(nanosecondsSinceEpoch, 1_000_000_000)
        let local = seconds + offsetSeconds
        let (days, secondOfDay) = Self.floorDivide(local, 86_400)
        let (year, month, day) = Self.civilDate(fromDays: days)
        var text = ""
        text.reserveCapacity(35)
        Self.appendPadded(&text, year, width: 4)
        text += "-"
        Self.appendPadded(&text, month, width: 2)
        text += "-"
        Self.appendPadded(&text, day, width: 2)
        text += "T"
        Self.appendPadded(&text, secondOfDay / 3600, width: 2)
        text += ":"
        Self.appendPadded(&text, (secondOfDay / 60) % 60, width: 2)
        text += ":"
        Self.appendPadded(&text, secondOfDay % 60, width: 2)
        if fractionDigits > 0 {
            var fraction = nanos
            for _ in 0..<(9 - Int(fractionDigits)) { fraction /= 10 }
            text += "."
            Self.appendPadded(&text, fraction, width: Int(fractionDigits))
        }
        if let minutes = utcOffsetMinutes {
            text += minutes < 0 ? "-" : "+"
            let magnitude = Int64(abs(Int(minutes)))
            Self.appendPadded(&text, magnitude / 60, width: 2)
            text += ":"
            Self.appendPadded(&text, magnitude % 60, width: 2)
        } else {
            text += "Z"
        }
        return text
    }

    /// Parses an RFC 3339 timestamp (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`).
    ///
    /// - Throws: ``EventInputError`` naming `field` and the part that is wrong.
    public init(rfc3339 text: String, field: String = "time") throws(EventInputError) {
        var utf8 = Array(text.utf8)
        func fail(_ rule: String) -> EventInputError {
            EventInputError(field: field, "\(field) \(text.quotedForMessage) is not an RFC 3339 timestamp: \(rule)")
        }
        // RFC 3339 allows lower-case separators.
        for index in utf8.indices where utf8[index] == UInt8(ascii: "t") || utf8[index] == UInt8(ascii: "z") {
            utf8[index] &-= 32
        }
        func digits(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= utf8.count else { return nil }
            var value: Int64 = 0
            for byte in utf8[start..<(start + count)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        func expect(_ index: Int, _ character: Unicode.Scalar) -> Bool {
            index < utf8.count && utf8[index] == UInt8(ascii: character)
        }
        guard let year = digits(0, 4), expect(4, "-"), let month = digits(5, 2), expect(7, "-"), let day = digits(8, 2)
        else { throw fail("expected the date as YYYY-MM-DD") }
        guard expect(10, "T"), let hour = digits(11, 2), expect(13, ":"), let minute = digits(14, 2), expect(16, ":"),
            let second = digits(17, 2)
        else { throw fail("expected 'T' and the time as HH:MM:SS") }
        guard (1...12).contains(month) else { throw fail("month \(month) is not 1 to 12") }
        guard day >= 1, day <= Self.daysIn(month: month, year: year) else { throw fail("day \(day) does not exist in that month") }
        guard hour <= 23 else { throw fail("hour \(hour) is not 0 to 23") }
        guard minute <= 59 else { throw fail("minute \(minute) is not 0 to 59") }
        guard second <= 59 else { throw fail("second \(second) is not 0 to 59 (leap seconds are not accepted)") }
        var index = 19
        var nanos: Int64 = 0
        var fractionCount = 0
        if expect(index, ".") {
            index += 1
            while index < utf8.count, utf8[index] >= 0x30, utf8[index] <= 0x39 {
                fractionCount += 1
                guard fractionCount <= 9 else { throw fail("more than 9 fractional digits") }
                nanos = nanos * 10 + Int64(utf8[index] - 0x30)
                index += 1
            }
            guard fractionCount > 0 else { throw fail("expected digits after '.'") }
            for _ in fractionCount..<9 { nanos *= 10 }
        }
        var offsetMinutes: Int16? = nil
        if expect(index, "Z") {
            index += 1
        } else if expect(index, "+") || expect(index, "-") {
            let negative = utf8[index] == UInt8(ascii: "-")
            guard let offsetHours = digits(index + 1, 2), expect(index + 3, ":"), let offsetMinute = digits(index + 4, 2)
            else { throw fail("expected the offset as ±HH:MM") }
            guard offsetHours <= 23, offsetMinute <= 59 else { throw fail("offset out of range") }
            let total = Int16(offsetHours * 60 + offsetMinute)
            offsetMinutes = negative ? -total : total
            index += 6
        } else {
            throw fail("expected 'Z' or an offset ±HH:MM after the time")
        }
        guard index == utf8.count else { throw fail("unexpected text after the offset") }
        let days = Self.days(fromCivilYear: year, month: month, day: day)
        let localSeconds = days * 86_400 + hour * 3600 + minute * 60 + second
        let utcSeconds = localSeconds - Int64(offsetMinutes ?? 0) * 60
        // Int64 nanoseconds cover 1677-09-21 to 2262-04-11.
        let (product, overflow) = utcSeconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow, product <= Int64.max - nanos else { throw fail("outside the years 1678 to 2261") }
        self.init(
            nanosecondsSinceEpoch: product + nanos,
            utcOffsetMinutes: offsetMinutes,
            fractionDigits: UInt8(fractionCount)
        )
    }

    // MARK: Calendar arithmetic (proleptic Gregorian; H. Hinnant's days_from_civil / civil_from_days)

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    package static func days(fromCivilYear year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilDate(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        var quotient = value / divisor
        var remainder = value % divisor
        if remainder < 0 {
            quotient -= 1
            remainder += divisor
        }
        return (quotient, remainder)
    }

    static func appendPadded(_ text: inout String, _ value: Int64, width: Int) {
        let digits = String(value)
        if digits.utf8.count < width { text += String(repeating: "0", count: width - digits.utf8.count) }
        text += digits
    }
}

import TestTiers
import Testing

@testable import RelayCore

/// `EventTime`: RFC 3339 parsing, the instant it denotes, and the exact text it prints back.
@Suite(.tier(.fast))
struct EventTimeTests {
    /// Text that is printed back exactly as it was given, and the instant it denotes.
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", Int64(0)),
        ("2026-11-21T10:00:00Z", Int64(1_795_255_200_000_000_000)),
        ("2026-11-21T12:00:00+02:00", Int64(1_795_255_200_000_000_000)),
        ("2026-11-21T11:00:00+01:00", Int64(1_795_255_200_000_000_000)),
        ("2026-11-21T04:30:00-05:30", Int64(1_795_255_200_000_000_000)),
        ("2026-11-21T12:00:00.5+02:00", Int64(1_795_255_200_500_000_000)),
        ("2026-01-01T00:00:00+14:00", Int64(1_767_175_200_000_000_000)),
        ("2026-01-01T00:00:00-12:00", Int64(1_767_268_800_000_000_000)),
        ("1999-12-31T23:59:59-00:30", Int64(946_686_599_000_000_000)),
        ("2024-02-29T23:59:59Z", Int64(1_709_251_199_000_000_000)),
        ("2000-02-29T12:34:56Z", Int64(951_827_696_000_000_000)),
        ("1969-12-31T23:59:59Z", Int64(-1_000_000_000)),
        ("1969-12-31T23:59:59.5Z", Int64(-500_000_000)),
        ("1969-12-31T23:59:59.999999999Z", Int64(-1)),
        ("1970-01-01T00:00:00+01:00", Int64(-3_600_000_000_000)),
        ("1969-07-20T20:17:40Z", Int64(-14_182_940_000_000_000)),
        ("1960-06-15T08:00:00Z", Int64(-301_248_000_000_000_000)),
        ("1900-01-01T00:00:00Z", Int64(-2_208_988_800_000_000_000)),
        ("1678-01-01T00:00:00Z", Int64(-9_214_560_000_000_000_000)),
        ("2261-12-31T23:59:59Z", Int64(9_214_646_399_000_000_000)),
        ("2262-04-11T23:47:16.854775807Z", Int64.max),
        ("1677-09-21T00:12:44Z", Int64(-9_223_372_036_000_000_000)),
    ])
    func instantAndExactText(text: String, nanoseconds: Int64) throws {
        let time = try EventTime(rfc3339: text)
        #expect(time.nanosecondsSinceEpoch == nanoseconds)
        #expect(time.rfc3339 == text)
        #expect(time.description == text)
    }

    @Test func partsAreKept() throws {
        let zulu = try EventTime(rfc3339: "2026-11-21T10:00:00Z")
        #expect(zulu.utcOffsetMinutes == nil)
        #expect(zulu.fractionDigits == 0)
        let plus = try EventTime(rfc3339: "2026-11-21T12:00:00.250+02:00")
        #expect(plus == EventTime(nanosecondsSinceEpoch: 1_795_255_200_250_000_000, utcOffsetMinutes: 120, fractionDigits: 3))
        let minus = try EventTime(rfc3339: "2026-11-21T04:30:00-05:30")
        #expect(minus == EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000, utcOffsetMinutes: -330, fractionDigits: 0))
        let utcOffset = try EventTime(rfc3339: "2026-11-21T10:00:00+00:00")
        #expect(utcOffset.utcOffsetMinutes == 0)
        #expect(utcOffset.rfc3339 == "2026-11-21T10:00:00+00:00")
        #expect(utcOffset != zulu)
        #expect(utcOffset.nanosecondsSinceEpoch == zulu.nanosecondsSinceEpoch)
        let maximum = try EventTime(rfc3339: "2026-11-21T10:00:00+23:59")
        #expect(maximum.utcOffsetMinutes == Int16(23 * 60 + 59))
        #expect(maximum.rfc3339 == "2026-11-21T10:00:00+23:59")
    }

    /// Every count of fractional digits, 0 to 9, is kept (trailing zeros included).
    @Test(arguments: 0...9)
    func fractionalDigits(count: Int) throws {
        let digits = String("123456789".prefix(count))
        let text = "2026-11-21T10:00:00" + (count > 0 ? "." + digits : "") + "Z"
        let time = try EventTime(rfc3339: text)
        #expect(time.fractionDigits == UInt8(count))
        #expect(time.rfc3339 == text)
        let nanos = count == 0 ? 0 : Int64(digits + String(repeating: "0", count: 9 - count))!
        #expect(time.nanosecondsSinceEpoch == 1_795_255_200_000_000_000 + nanos)
    }

    @Test(arguments: [
        ("2026-11-21T10:00:00.000Z", Int64(0), UInt8(3)),
        ("2026-11-21T10:00:00.100Z", Int64(100_000_000), UInt8(3)),
        ("2026-11-21T10:00:00.000000001Z", Int64(1), UInt8(9)),
        ("2026-11-21T10:00:00.0Z", Int64(0), UInt8(1)),
        ("2026-11-21T10:00:00.050+01:00", Int64(50_000_000), UInt8(3)),
    ])
    func zerosInTheFractionAreKept(text: String, nanos: Int64, digits: UInt8) throws {
        let time = try EventTime(rfc3339: text)
        #expect(time.fractionDigits == digits)
        #expect(time.rfc3339 == text)
        let base: Int64 = text.hasSuffix("+01:00") ? 1_795_251_600_000_000_000 : 1_795_255_200_000_000_000
        #expect(time.nanosecondsSinceEpoch == base + nanos)
    }

    @Test(arguments: [
        ("2026-11-21t10:00:00z", "2026-11-21T10:00:00Z"),
        ("2026-11-21t10:00:00.5Z", "2026-11-21T10:00:00.5Z"),
        ("2026-11-21T10:00:00.5z", "2026-11-21T10:00:00.5Z"),
        ("2026-11-21t12:00:00+02:00", "2026-11-21T12:00:00+02:00"),
    ])
    func lowerCaseSeparatorsAreAccepted(text: String, formatted: String) throws {
        let time = try EventTime(rfc3339: text)
        #expect(time.rfc3339 == formatted)
        #expect(time.nanosecondsSinceEpoch == (try EventTime(rfc3339: formatted)).nanosecondsSinceEpoch)
    }

    @Test(arguments: [
        "2024-02-29T00:00:00Z",
        "2000-02-29T00:00:00Z",
        "2096-02-29T00:00:00Z",
        "1904-02-29T00:00:00Z",
        "2026-01-31T00:00:00Z",
        "2026-04-30T00:00:00Z",
        "2026-12-31T23:59:59Z",
    ])
    func validCalendarDates(text: String) throws {
        #expect(try EventTime(rfc3339: text).rfc3339 == text)
    }

    /// Refused texts and the exact rule each one breaks.
    @Test(arguments: [
        ("2023-02-29T00:00:00Z", "day 29 does not exist in that month"),
        ("1900-02-29T00:00:00Z", "day 29 does not exist in that month"),
        ("2100-02-29T00:00:00Z", "day 29 does not exist in that month"),
        ("2026-04-31T00:00:00Z", "day 31 does not exist in that month"),
        ("2026-01-32T00:00:00Z", "day 32 does not exist in that month"),
        ("2026-01-00T00:00:00Z", "day 0 does not exist in that month"),
        ("2026-13-01T00:00:00Z", "month 13 is not 1 to 12"),
        ("2026-00-01T00:00:00Z", "month 0 is not 1 to 12"),
        ("2026-11-21T24:00:00Z", "hour 24 is not 0 to 23"),
        ("2026-11-21T10:60:00Z", "minute 60 is not 0 to 59"),
        ("2026-11-21T23:59:60Z", "second 60 is not 0 to 59 (leap seconds are not accepted)"),
        ("2026-11-21T10:00:00.1234567890Z", "more than 9 fractional digits"),
        ("2026-11-21T10:00:00.Z", "expected digits after '.'"),
        ("2026-11-21T10:00:00", "expected 'Z' or an offset ±HH:MM after the time"),
        ("2026-11-21T10:00:00.5", "expected 'Z' or an offset ±HH:MM after the time"),
        ("2026-11-21T10:00:00 Z", "expected 'Z' or an offset ±HH:MM after the time"),
        ("2026-11-21T10:00:00ZZ", "unexpected text after the offset"),
        ("2026-11-21T10:00:00Z ", "unexpected text after the offset"),
        ("2026-11-21T10:00:00Zjunk", "unexpected text after the offset"),
        ("2026-11-21T10:00:00+01:00:00", "unexpected text after the offset"),
        ("2026-11-21T10:00:00+0100", "expected the offset as ±HH:MM"),
        ("2026-11-21T10:00:00+01", "expected the offset as ±HH:MM"),
        ("2026-11-21T10:00:00+1:00", "expected the offset as ±HH:MM"),
        ("2026-11-21T10:00:00+24:00", "offset out of range"),
        ("2026-11-21T10:00:00+01:60", "offset out of range"),
        ("2026-11-21 10:00:00Z", "expected 'T' and the time as HH:MM:SS"),
        ("2026-11-21T10:00Z", "expected 'T' and the time as HH:MM:SS"),
        ("2026-11-21T1:00:00Z", "expected 'T' and the time as HH:MM:SS"),
        ("2026-11-21", "expected 'T' and the time as HH:MM:SS"),
        ("26-11-21T10:00:00Z", "expected the date as YYYY-MM-DD"),
        ("2026/11/21T10:00:00Z", "expected the date as YYYY-MM-DD"),
        ("2026-1-21T10:00:00Z", "expected the date as YYYY-MM-DD"),
        ("", "expected the date as YYYY-MM-DD"),
        ("1795255200", "expected the date as YYYY-MM-DD"),
        ("2262-04-11T23:47:16.854775808Z", "outside the years 1678 to 2261"),
        ("2262-04-12T00:00:00Z", "outside the years 1678 to 2261"),
        ("9999-12-31T23:59:59Z", "outside the years 1678 to 2261"),
        ("1600-01-01T00:00:00Z", "outside the years 1678 to 2261"),
    ])
    func refused(text: String, rule: String) throws {
        let error = try #require(throws: EventInputError.self) { try EventTime(rfc3339: text) }
        #expect(error.field == "time")
        #expect(error.message == "time \(JSONText.quoted(text)) is not an RFC 3339 timestamp: \(rule)")
    }

    @Test func fieldNameIsUsedInMessages() throws {
        let error = try #require(throws: EventInputError.self) { try EventTime(rfc3339: "yesterday", field: "when") }
        #expect(error.field == "when")
        #expect(error.message == #"when "yesterday" is not an RFC 3339 timestamp: expected the date as YYYY-MM-DD"#)
    }

    @Test func formattingFromParts() {
        let base: Int64 = 1_795_255_200_123_456_789
        #expect(EventTime(nanosecondsSinceEpoch: base, utcOffsetMinutes: nil, fractionDigits: 9).rfc3339 == "2026-11-21T10:00:00.123456789Z")
        #expect(EventTime(nanosecondsSinceEpoch: base, utcOffsetMinutes: -330, fractionDigits: 9).rfc3339 == "2026-11-21T04:30:00.123456789-05:30")
        #expect(EventTime(nanosecondsSinceEpoch: base, utcOffsetMinutes: 60, fractionDigits: 2).rfc3339 == "2026-11-21T11:00:00.12+01:00")
        #expect(EventTime(nanosecondsSinceEpoch: base, utcOffsetMinutes: 0, fractionDigits: 0).rfc3339 == "2026-11-21T10:00:00+00:00")
        #expect(EventTime(nanosecondsSinceEpoch: base).rfc3339 == "2026-11-21T10:00:00.123Z")
        // Offsets that move the local date across midnight, both ways.
        #expect(
            EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000, utcOffsetMinutes: 14 * 60, fractionDigits: 0).rfc3339
                == "2026-11-22T00:00:00+14:00")
        #expect(
            EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000, utcOffsetMinutes: -11 * 60, fractionDigits: 0).rfc3339
                == "2026-11-20T23:00:00-11:00")
        #expect(EventTime(nanosecondsSinceEpoch: -1, utcOffsetMinutes: nil, fractionDigits: 9).rfc3339 == "1969-12-31T23:59:59.999999999Z")
        #expect(EventTime(nanosecondsSinceEpoch: Int64.min, utcOffsetMinutes: nil, fractionDigits: 9).rfc3339 == "1677-09-21T00:12:43.145224192Z")
    }

    @Test func fractionDigitsAreClampedToNine() {
        let time = EventTime(nanosecondsSinceEpoch: 5, utcOffsetMinutes: nil, fractionDigits: 12)
        #expect(time.fractionDigits == 9)
        #expect(time.rfc3339 == "1970-01-01T00:00:00.000000005Z")
    }

    @Test func orderIsByInstant() throws {
        let early = try EventTime(rfc3339: "2026-11-21T12:00:00+02:00")  // 10:00Z
        let late = try EventTime(rfc3339: "2026-11-21T10:00:00.001Z")
        let same = try EventTime(rfc3339: "2026-11-21T10:00:00Z")
        #expect(early < late)
        #expect(!(late < early))
        #expect(!(early < same))
        #expect(!(same < early))
        #expect(early != same)
        #expect([late, same, early].sorted().last == late)
        #expect([late, early].sorted() == [early, late])
    }

    @Test func nowIsWholeMillisecondsInUTC() {
        let now = EventTime.now()
        #expect(now.utcOffsetMinutes == nil)
        #expect(now.fractionDigits == 3)
        #expect(now.nanosecondsSinceEpoch % 1_000_000 == 0)
        // After 2025-01-01 and before 2100-01-01.
        #expect(now.nanosecondsSinceEpoch > 1_735_689_600_000_000_000)
        #expect(now.nanosecondsSinceEpoch < 4_102_444_800_000_000_000)
    }

    @Test func calendarArithmeticAgreesBothWays() {
        // Every 97th day between 1678 and 2261 round-trips through the civil date.
        var days: Int64 = -106_650
        while days < 106_650 {
            let (year, month, day) = EventTime.civilDate(fromDays: days)
            #expect(EventTime.days(fromCivilYear: year, month: month, day: day) == days)
            #expect((1...12).contains(month))
            #expect(day >= 1 && day <= EventTime.daysIn(month: month, year: year))
            days += 97
        }
        #expect(EventTime.days(fromCivilYear: 1970, month: 1, day: 1) == 0)
        #expect(EventTime.days(fromCivilYear: 2000, month: 3, day: 1) == 11_017)
        #expect(EventTime.days(fromCivilYear: 1969, month: 12, day: 31) == -1)
    }
}

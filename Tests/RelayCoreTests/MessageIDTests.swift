import CampaignProtocol
import TestTiers
import Testing

@testable import RelayCore

/// `MessageID`: the Campaign rules for `_mId` and its wire form in `id=h{messageId},…`.
@Suite(.tier(.fast))
struct MessageIDTests {
    /// The vectors of docs/campaign-protocol.md, plus the edges of the 64-bit and 32-bit ranges.
    @Test(arguments: [
        ("55336", "d828"),
        ("12345", "3039"),
        ("673096100", "281ea1a4"),
        ("-1709416000", "9a1c61c0"),
        ("0", "0"),
        ("1", "1"),
        ("255", "ff"),
        ("9223372036854775807", "7fffffffffffffff"),
        ("-1", "ffffffff"),
        ("-2147483648", "80000000"),
        ("-2147483649", "ffffffff7fffffff"),
        ("-4294967297", "fffffffeffffffff"),
        ("-9223372036854775808", "8000000000000000"),
        ("007", "7"),
        ("-0", "0"),
    ])
    func decimalWireForm(text: String, wire: String) throws {
        let id = try MessageID(text)
        #expect(id.wireForm == wire)
        #expect(id.text == text)
        #expect(id.description == text)
        guard case .decimal(let value) = id.form else {
            Issue.record("\(text) should have the decimal form, has \(id.form)")
            return
        }
        #expect(String(value) == String(Int64(text)!))
    }

    @Test func decimalValuesAreExact() throws {
        #expect(try MessageID("55336").form == .decimal(55336))
        #expect(try MessageID("-1709416000").form == .decimal(-1_709_416_000))
        #expect(try MessageID("9223372036854775807").form == .decimal(Int64.max))
        #expect(try MessageID("-9223372036854775808").form == .decimal(Int64.min))
        #expect(try MessageID("007").form == .decimal(7))
    }

    @Test(arguments: [
        "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6",
        "6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6",
        "6b6499A8-9d43-4BC5-acf0-B6AEB96846f6",
        "00000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
    ])
    func uuidIsSentUnchanged(text: String) throws {
        let id = try MessageID(text)
        #expect(id.wireForm == text)
        #expect(id.text == text)
        guard case .uuid = id.form else {
            Issue.record("\(text) should have the UUID form, has \(id.form)")
            return
        }
    }

    @Test func uuidBytesAndCase() throws {
        let lower = try MessageID("6b6499a8-9d43-4bc5-acf0-b6aeb96846f6")
        #expect(lower.form == .uuid((0x6b64_99a8_9d43_4bc5, 0xacf0_b6ae_b968_46f6), uppercase: false))
        let upper = try MessageID("6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6")
        #expect(upper.form == .uuid((0x6b64_99a8_9d43_4bc5, 0xacf0_b6ae_b968_46f6), uppercase: true))
        let mixed = try MessageID("6b6499A8-9d43-4bc5-acf0-b6aeb96846f6")
        #expect(mixed.form == .uuid((0x6b64_99a8_9d43_4bc5, 0xacf0_b6ae_b968_46f6), uppercase: nil))
        // All digits: no letter of either case.
        let digits = try MessageID("12345678-1234-1234-1234-123456789012")
        #expect(digits.form == .uuid((0x1234_5678_1234_1234, 0x1234_1234_5678_9012), uppercase: false))
    }

    @Test func uuidTextFromBytes() {
        let bytes: MessageID.UUIDBytes = (0x6b64_99a8_9d43_4bc5, 0xacf0_b6ae_b968_46f6)
        #expect(MessageID.uuidText(bytes, uppercase: false) == "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6")
        #expect(MessageID.uuidText(bytes, uppercase: true) == "6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6")
    }

    @Test(arguments: [
        "a8a",
        "1-1-1-1-1",
        " 1",
        "1 ",
        "1.0",
        "1e3",
        "0x1f",
        "-",
        "--1",
        "１２",
        "6b6499a8-9d43-4bc5-acf0-b6aeb96846f",
        "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6a",
        "6b6499a89-d43-4bc5-acf0-b6aeb96846f6",
        "6b6499a8-9d43-4bc5-acf0-b6aeb96846fg",
        "6b6499a8_9d43_4bc5_acf0_b6aeb96846f6",
        "{6b6499a8-9d43-4bc5-acf0-b6aeb96846f6}",
        "6b6499a89d434bc5acf0b6aeb96846f6",
    ])
    func refusedAsNeitherUUIDNorDecimal(text: String) throws {
        let error = try #require(throws: EventInputError.self) { try MessageID(text) }
        #expect(error.field == "messageId")
        #expect(error.message == "messageId \(JSONText.quoted(text)) is neither a UUID nor a decimal integer")
    }

    @Test func exactRejectionMessages() throws {
        let a8a = try #require(throws: EventInputError.self) { try MessageID("a8a") }
        #expect(a8a.field == "messageId")
        #expect(a8a.message == #"messageId "a8a" is neither a UUID nor a decimal integer"#)
        #expect(a8a.description == #"messageId "a8a" is neither a UUID nor a decimal integer"#)

        let dashes = try #require(throws: EventInputError.self) { try MessageID("1-1-1-1-1") }
        #expect(dashes.message == #"messageId "1-1-1-1-1" is neither a UUID nor a decimal integer"#)

        let empty = try #require(throws: EventInputError.self) { try MessageID("") }
        #expect(empty.field == "messageId")
        #expect(empty.message == "messageId is empty")
    }

    @Test(arguments: [
        "99999999999999999999",
        "9223372036854775808",
        "-9223372036854775809",
        "18446744073709551616",
        "123456789012345678901234567890",
    ])
    func outOfTheSixtyFourBitRange(text: String) throws {
        let error = try #require(throws: EventInputError.self) { try MessageID(text) }
        #expect(error.field == "messageId")
        #expect(error.message == "messageId \"\(text)\" is a decimal integer outside the 64-bit range")
    }

    @Test func fieldNameIsUsedInMessages() throws {
        let error = try #require(throws: EventInputError.self) { try MessageID("x", field: "_mId") }
        #expect(error.field == "_mId")
        #expect(error.message == #"_mId "x" is neither a UUID nor a decimal integer"#)
        let empty = try #require(throws: EventInputError.self) { try MessageID("", field: "_mId") }
        #expect(empty.message == "_mId is empty")
    }

    @Test func longValuesAreCutInMessages() throws {
        let text = String(repeating: "x", count: 100)
        let error = try #require(throws: EventInputError.self) { try MessageID(text) }
        #expect(error.message == "messageId \"\(String(repeating: "x", count: 64))\"… is neither a UUID nor a decimal integer")
    }

    @Test func quotesInTheValueAreEscapedInMessages() throws {
        let error = try #require(throws: EventInputError.self) { try MessageID("a\"b\\c") }
        #expect(error.message == #"messageId "a\"b\\c" is neither a UUID nor a decimal integer"#)
    }

    @Test func textIsKeptExactly() throws {
        let padded = try MessageID("007")
        #expect(padded.text == "007")
        #expect(padded.wireForm == "7")
        let plain = try MessageID("7")
        // Equality is on the text: "007" and "7" are different identifiers for the log.
        #expect(padded != plain)
        #expect(padded == (try MessageID("007")))
        #expect(MessageID(decimal: 7) == plain)
        #expect(MessageID(decimal: 7).text == "7")
        #expect(MessageID(decimal: -1_709_416_000).text == "-1709416000")
        #expect(MessageID(decimal: -1_709_416_000).wireForm == "9a1c61c0")
        #expect(MessageID(decimal: Int64.min).text == "-9223372036854775808")
    }

    @Test func hashingFollowsTheText() throws {
        let set: Set<MessageID> = [try MessageID("55336"), try MessageID("55336"), try MessageID("055336")]
        #expect(set.count == 2)
    }
}

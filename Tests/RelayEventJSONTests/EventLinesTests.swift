import RelayEventJSON
import TestTiers
import Testing

@testable import RelayCore

/// `EventLines`: JSONL input, line numbers of rejections, line endings and blank lines.
@Suite(.tier(.fast))
struct EventLinesTests {
    static let defaultTime = EventTime(nanosecondsSinceEpoch: 1_795_255_200_123_000_000, utcOffsetMinutes: nil, fractionDigits: 3)

    static let track1 = #"{"kind":"track","action":"open","messageId":"55336","deliveryId":"f0190","time":"2026-11-21T10:00:00Z"}"#
    static let track2 = #"{"kind":"track","action":"click","_mId":"12345","_dId":"f0191"}"#
    static let register = #"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","userKey":""}"#
    static let badMessageId = #"{"kind":"track","action":"open","messageId":"a8a","deliveryId":"f0190"}"#

    private func decodeLines(_ text: String, firstLine: Int = 1) -> EventLines.Decoded {
        EventLines.decode(Array(text.utf8), firstLine: firstLine, defaultTime: Self.defaultTime)
    }

    private func event(_ line: String) throws -> Event {
        try EventDecoder.decode(line, defaultTime: Self.defaultTime)
    }

    @Test func rejectionsCarryTheirOneBasedLineNumberCountingBlankLines() throws {
        let text = [Self.track1, "", Self.badMessageId, "   ", Self.register, "\t", "{not json", Self.track2, ""].joined(separator: "\n")
        let decoded = decodeLines(text)
        #expect(decoded.events == [try event(Self.track1), try event(Self.register), try event(Self.track2)])
        #expect(decoded.rejections.map(\.line) == [3, 7])
        #expect(
            decoded.rejections.map(\.description) == [
                #"line 3: messageId "a8a" is neither a UUID nor a decimal integer"#,
                "line 7: invalid JSON at byte 1: expected a member name in double quotes",
            ])
        #expect(decoded.rejections[0].error == EventInputError(field: "messageId", #"messageId "a8a" is neither a UUID nor a decimal integer"#))
        #expect(decoded.rejections[1].error.field == nil)
        #expect(decoded.lines == 8)
    }

    @Test func crlfLineEndings() throws {
        let text = Self.track1 + "\r\n" + "\r\n" + Self.badMessageId + "\r\n" + Self.register + "\r\n"
        let decoded = decodeLines(text)
        #expect(decoded.events == [try event(Self.track1), try event(Self.register)])
        #expect(decoded.rejections.map(\.line) == [3])
        #expect(decoded.rejections.first?.error.message == #"messageId "a8a" is neither a UUID nor a decimal integer"#)
        #expect(decoded.lines == 4)
    }

    @Test func mixedLineEndings() throws {
        let text = Self.track1 + "\n" + Self.track2 + "\r\n" + Self.register
        let decoded = decodeLines(text)
        #expect(decoded.events == [try event(Self.track1), try event(Self.track2), try event(Self.register)])
        #expect(decoded.rejections.isEmpty)
        #expect(decoded.lines == 3)
    }

    @Test func lastLineWithoutNewline() throws {
        let decoded = decodeLines(Self.track1 + "\n" + Self.register)
        #expect(decoded.events == [try event(Self.track1), try event(Self.register)])
        #expect(decoded.lines == 2)

        let crOnly = decodeLines(Self.track1 + "\n" + Self.register + "\r")
        #expect(crOnly.events == [try event(Self.track1), try event(Self.register)])
        #expect(crOnly.rejections.isEmpty)

        let badLast = decodeLines(Self.track1 + "\n\n" + Self.badMessageId)
        #expect(badLast.events == [try event(Self.track1)])
        #expect(badLast.rejections.map(\.line) == [3])
        #expect(badLast.lines == 3)
    }

    @Test func blankLinesAreSkipped() throws {
        let decoded = decodeLines("\n\n \t \n" + Self.track2 + "\n\n\r\n \r\n")
        #expect(decoded.events == [try event(Self.track2)])
        #expect(decoded.rejections.isEmpty)
        #expect(decoded.lines == 7)
    }

    @Test func emptyInput() {
        let decoded = decodeLines("")
        #expect(decoded.events.isEmpty)
        #expect(decoded.rejections.isEmpty)
        #expect(decoded.lines == 0)

        let newlineOnly = decodeLines("\n")
        #expect(newlineOnly.events.isEmpty)
        #expect(newlineOnly.rejections.isEmpty)
        #expect(newlineOnly.lines == 1)
    }

    @Test func whiteSpaceAroundTheObjectIsAllowed() throws {
        let decoded = decodeLines("  " + Self.track1 + " \t\n\t" + Self.register + "  \r\n")
        #expect(decoded.events == [try event(Self.track1), try event(Self.register)])
        #expect(decoded.rejections.isEmpty)
    }

    @Test func numberingStartsAtFirstLine() throws {
        let decoded = decodeLines(Self.track1 + "\n" + Self.badMessageId + "\n\n" + Self.badMessageId + "\n", firstLine: 101)
        #expect(decoded.events == [try event(Self.track1)])
        #expect(decoded.rejections.map(\.line) == [102, 104])
        #expect(
            decoded.rejections.map(\.description) == [
                #"line 102: messageId "a8a" is neither a UUID nor a decimal integer"#,
                #"line 104: messageId "a8a" is neither a UUID nor a decimal integer"#,
            ])
        #expect(decoded.lines == 4)
    }

    @Test func defaultTimeIsGivenToEventsWithoutTime() throws {
        let decoded = decodeLines(Self.track1 + "\n" + Self.track2 + "\n")
        #expect(decoded.events.map(\.time) == [try EventTime(rfc3339: "2026-11-21T10:00:00Z"), Self.defaultTime])
    }

    @Test func everyLineIsDecodedOnItsOwn() throws {
        // Two objects on one line are refused; an object split over two lines gives two rejections.
        let decoded = decodeLines(Self.track1 + Self.track2 + "\n{\"kind\":\"track\",\n\"action\":\"open\"}\n" + Self.register)
        #expect(decoded.events == [try event(Self.register)])
        #expect(decoded.rejections.map(\.line) == [1, 2, 3])
        #expect(
            decoded.rejections.map(\.error.message) == [
                "invalid JSON at byte \(Self.track1.utf8.count): unexpected text after the JSON value",
                "invalid JSON at byte 16: unexpected end of input in an object",
                "invalid JSON at byte 8: unexpected text after the JSON value",
            ])
    }

    @Test func overlongLineIsRefusedWithoutStoppingTheRest() throws {
        let padding = String(repeating: " ", count: EventLines.maximumLineBytes)
        let decoded = decodeLines(Self.track1 + "\n" + Self.track2 + padding + "\n" + Self.register)
        #expect(decoded.events == [try event(Self.track1), try event(Self.register)])
        #expect(decoded.rejections.map(\.line) == [2])
        #expect(decoded.rejections.first?.error == EventInputError(field: nil, "line is longer than 1048576 bytes"))
        #expect(decoded.lines == 3)
    }

    @Test func decodingFromABufferAgrees() throws {
        let bytes = Array((Self.track1 + "\n" + Self.badMessageId + "\n").utf8)
        let decoded = bytes.withUnsafeBufferPointer { EventLines.decode($0, firstLine: 5, defaultTime: Self.defaultTime) }
        #expect(decoded.events == [try event(Self.track1)])
        #expect(
            decoded.rejections == [
                EventLines.Rejection(line: 6, error: EventInputError(field: "messageId", #"messageId "a8a" is neither a UUID nor a decimal integer"#))
            ])
        #expect(decoded.lines == 2)
    }
}

import TestTiers
import Testing

@testable import RelayCore

/// `JSONParser`: a strict RFC 8259 parser that keeps member order and number literals.
@Suite(.tier(.fast))
struct JSONParserTests {
    private func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try JSONParser.parse(text)
    }

    private func syntaxError(_ bytes: [UInt8]) throws -> JSONSyntaxError {
        try #require(throws: JSONSyntaxError.self) { try JSONParser.parse(bytes) }
    }

    private func syntaxError(_ text: String) throws -> JSONSyntaxError {
        try syntaxError(Array(text.utf8))
    }

    // MARK: Valid documents

    @Test func nestedDocument() throws {
        let value = try parse(#"{"a":1,"b":[true,false,null,"x",[],{}],"c":{"d":"e","f":{"g":-2.5}}}"#)
        #expect(
            value
                == .object([
                    JSONMember(name: "a", value: .number("1")),
                    JSONMember(name: "b", value: .array([.bool(true), .bool(false), .null, .string("x"), .array([]), .object([])])),
                    JSONMember(
                        name: "c",
                        value: .object([
                            JSONMember(name: "d", value: .string("e")),
                            JSONMember(name: "f", value: .object([JSONMember(name: "g", value: .number("-2.5"))])),
                        ])),
                ]))
    }

    @Test func memberOrderIsPreserved() throws {
        let value = try parse(#"{"z":1,"a":2,"m":3,"b":4}"#)
        guard case .object(let members) = value else {
            Issue.record("expected an object, got \(value)")
            return
        }
        #expect(members.map(\.name) == ["z", "a", "m", "b"])
        #expect(members.map(\.value) == [.number("1"), .number("2"), .number("3"), .number("4")])
    }

    @Test(arguments: [
        "0", "-0", "1", "-1", "1.5e3", "1.5E3", "1E+10", "-12.5e-3", "0.25", "0e0", "10", "3233",
        "123456789012345678901234567890", "1.000000000000000000001", "-0.0",
    ])
    func numbersKeepTheirLiteralText(literal: String) throws {
        #expect(try parse(literal) == .number(literal))
        #expect(try parse(#"{"n":\#(literal)}"#) == .object([JSONMember(name: "n", value: .number(literal))]))
        #expect(try parse("[\(literal),\(literal)]") == .array([.number(literal), .number(literal)]))
    }

    @Test func literals() throws {
        #expect(try parse("true") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse("null") == .null)
        #expect(try parse(#""""#) == .string(""))
        #expect(try parse("[]") == .array([]))
        #expect(try parse("{}") == .object([]))
    }

    @Test func whiteSpaceAroundAndInside() throws {
        let value = try parse(" \t\r\n{ \"a\" :\n[ 1 ,\t2 ] , \"b\"\r\n: \"c\" } \n")
        #expect(
            value
                == .object([
                    JSONMember(name: "a", value: .array([.number("1"), .number("2")])),
                    JSONMember(name: "b", value: .string("c")),
                ]))
    }

    @Test(arguments: [
        (#""\"""#, "\""),
        (#""\\""#, "\\"),
        (#""\/""#, "/"),
        (#""\b\f\n\r\t""#, "\u{08}\u{0C}\n\r\t"),
        (#""a\u0041b""#, "aAb"),
        (#""\u00e9\u00E9""#, "éé"),
        (#""\u20AC""#, "€"),
        (#""\u0000""#, "\u{0}"),
        (#""\u001f""#, "\u{1F}"),
        (#""\uD83D\uDE00""#, "😀"),
        (#""\ud83d\ude00x""#, "😀x"),
        (#""\uDBFF\uDFFF""#, "\u{10FFFF}"),
        (#""x\uD800\uDC00y""#, "x\u{10000}y"),
        (#""é😀 raw""#, "é😀 raw"),
        (#""é\n😀""#, "é\n😀"),
        (#""tab\tthen \"quote\" and \\ backslash""#, "tab\tthen \"quote\" and \\ backslash"),
    ])
    func stringEscapes(json: String, expected: String) throws {
        #expect(try parse(json) == .string(expected))
    }

    @Test func escapedMemberNames() throws {
        let value = try parse(#"{"a\u0062":1,"\n":2}"#)
        #expect(value == .object([JSONMember(name: "ab", value: .number("1")), JSONMember(name: "\n", value: .number("2"))]))
    }

    @Test func depthOfThirtyTwoIsAccepted() throws {
        let arrays = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        var expected = JSONValue.array([])
        for _ in 1..<32 { expected = .array([expected]) }
        #expect(try parse(arrays) == expected)

        let objects = String(repeating: #"{"a":"#, count: 31) + "{}" + String(repeating: "}", count: 31)
        _ = try parse(objects)
        // Depth is about nesting, not about how many containers a document has.
        let wide =
            "[" + Array(repeating: String(repeating: "[", count: 31) + String(repeating: "]", count: 31), count: 10).joined(separator: ",") + "]"
        _ = try parse(wide)
    }

    @Test func parsingFromBytesAndStringsAgrees() throws {
        let text = #"{"k":"é","n":[1.5e3]}"#
        #expect(try JSONParser.parse(Array(text.utf8)) == (try JSONParser.parse(text)))
    }

    @Test func typeNames() throws {
        #expect(JSONValue.null.typeName == "null")
        #expect(JSONValue.bool(true).typeName == "a boolean")
        #expect(JSONValue.number("1").typeName == "a number")
        #expect(JSONValue.string("").typeName == "a string")
        #expect(JSONValue.array([]).typeName == "an array")
        #expect(JSONValue.object([]).typeName == "an object")
    }

    // MARK: Refusals, with the offset and the reason

    @Test(arguments: [
        // Trailing commas.
        (#"{"a":1,}"#, 7, "expected a member name in double quotes"),
        ("[1,]", 3, "unexpected character ']', expected a value"),
        ("[1,2,]", 5, "unexpected character ']', expected a value"),
        // Duplicate members: the offset is the second name's quote.
        (#"{"a":1,"a":2}"#, 7, #"duplicate member "a""#),
        (#"{"a":1, "b":2, "a":3}"#, 15, #"duplicate member "a""#),
        (#"{"x":{"a":1,"a":2}}"#, 12, #"duplicate member "a""#),
        (#"{"a":1,"\u0061":2}"#, 7, #"duplicate member "a""#),
        // Leading zeros and other malformed numbers.
        ("01", 1, "a number may not have leading zeros"),
        ("-012", 2, "a number may not have leading zeros"),
        (#"{"n":00}"#, 6, "a number may not have leading zeros"),
        ("-", 1, "expected a digit in a number"),
        ("-a", 1, "expected a digit in a number"),
        ("1.", 2, "expected a digit after '.' in a number"),
        ("1.e3", 2, "expected a digit after '.' in a number"),
        ("1e", 2, "expected a digit in a number's exponent"),
        ("1e+", 3, "expected a digit in a number's exponent"),
        (".5", 0, "unexpected character '.', expected a value"),
        ("+1", 0, "unexpected character '+', expected a value"),
        // Unterminated strings and escapes.
        (#""abc"#, 4, "unterminated string"),
        (#""a\nbc"#, 6, "unterminated string"),
        ("\"ab\\", 4, "unterminated escape in a string"),
        (#"{"a"#, 3, "unterminated string"),
        (#""\x""#, 2, #"an invalid escape \x"#),
        (#""\'""#, 2, #"an invalid escape \'"#),
        (#""\u12G4""#, 5, #"a \u escape needs four hex digits"#),
        (#""\u12""#, 3, #"a \u escape needs four hex digits"#),
        // Lone surrogates.
        (#""\uD800""#, 7, #"a high surrogate \u escape without its low surrogate"#),
        (#""\uD800x""#, 7, #"a high surrogate \u escape without its low surrogate"#),
        (#""\uDBFF\n""#, 7, #"a high surrogate \u escape without its low surrogate"#),
        (#""\uD800\u0041""#, 13, "a high surrogate followed by a non-low surrogate"),
        (#""\uD800\uD800""#, 13, "a high surrogate followed by a non-low surrogate"),
        (#""\uDC00""#, 7, #"a lone low surrogate \u escape"#),
        (#""a\uDFFFb""#, 8, #"a lone low surrogate \u escape"#),
        // Text after the value.
        ("{} x", 3, "unexpected text after the JSON value"),
        ("1 2", 2, "unexpected text after the JSON value"),
        (#"{"a":1}}"#, 7, "unexpected text after the JSON value"),
        (#"{"a":1},{"b":2}"#, 7, "unexpected text after the JSON value"),
        ("truex", 4, "unexpected text after the JSON value"),
        ("null\n\n[", 6, "unexpected text after the JSON value"),
        // Empty input and bad literals.
        ("", 0, "unexpected end of input, expected a value"),
        (" \n\t", 3, "unexpected end of input, expected a value"),
        ("tru", 0, "unexpected end of input in a literal"),
        ("trux", 3, "invalid literal, expected true"),
        ("nul", 0, "unexpected end of input in a literal"),
        ("nulL", 3, "invalid literal, expected null"),
        ("fals3", 4, "invalid literal, expected false"),
        ("True", 0, "unexpected character 'T', expected a value"),
        ("'a'", 0, "unexpected character ''', expected a value"),
        ("// comment\n{}", 0, "unexpected character '/', expected a value"),
        (#"{"a":1 /* c */}"#, 7, "expected ',' or '}' in an object"),
        // Structure.
        ("{", 1, "unexpected end of input in an object"),
        (#"{"a":1"#, 6, "unexpected end of input in an object"),
        (#"{"a":1,"#, 7, "unexpected end of input in an object"),
        ("[", 1, "unexpected end of input, expected a value"),
        ("[1", 2, "unexpected end of input in an array"),
        ("[1 2]", 3, "expected ',' or ']' in an array"),
        (#"{"a" 1}"#, 5, "expected ':' after a member name"),
        (#"{"a"}"#, 4, "expected ':' after a member name"),
        (#"{"a":}"#, 5, "unexpected character '}', expected a value"),
        (#"{"a":1 "b":2}"#, 7, "expected ',' or '}' in an object"),
        ("{1:2}", 1, "expected a member name in double quotes"),
        ("{a:1}", 1, "expected a member name in double quotes"),
        ("[1}", 2, "expected ',' or ']' in an array"),
    ])
    func refusedText(json: String, offset: Int, reason: String) throws {
        let error = try syntaxError(json)
        #expect(error.offset == offset)
        #expect(error.reason == reason)
        #expect(error.description == "invalid JSON at byte \(offset): \(reason)")
    }

    @Test(
        arguments: [
            // A raw line feed, tab and NUL inside strings (fast path, escaped path, member name).
            ([0x22, 0x61, 0x0A, 0x22], 2, "a raw control character (byte 0xa) in a string; escape it"),
            ([0x22, 0x5C, 0x6E, 0x09, 0x22], 3, "a raw control character (byte 0x9) in a string; escape it"),
            ([0x7B, 0x22, 0x00, 0x22, 0x3A, 0x31, 0x7D], 2, "a raw control character (byte 0x0) in a string; escape it"),
            ([0x22, 0x1F, 0x22], 1, "a raw control character (byte 0x1f) in a string; escape it"),
            // Invalid UTF-8: the offset is the string's first byte after the quote.
            ([0x22, 0x61, 0xFF, 0x22], 1, "a string is not valid UTF-8"),
            ([0x22, 0xC0, 0xAF, 0x22], 1, "a string is not valid UTF-8"),
            ([0x22, 0xED, 0xA0, 0x80, 0x22], 1, "a string is not valid UTF-8"),
            ([0x22, 0xE2, 0x82, 0x22], 1, "a string is not valid UTF-8"),
            ([0x22, 0x80, 0x22], 1, "a string is not valid UTF-8"),
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1, "a string is not valid UTF-8"),
            ([0x22, 0x5C, 0x6E, 0xFF, 0x22], 1, "a string is not valid UTF-8"),
            ([0x7B, 0x22, 0xFE, 0x22, 0x3A, 0x31, 0x7D], 2, "a string is not valid UTF-8"),
            ([0x5B, 0x31, 0x2C, 0x22, 0x61, 0xC3, 0x22, 0x5D], 4, "a string is not valid UTF-8"),
            // Bytes outside any token.
            ([0x01], 0, "unexpected character byte 0x1, expected a value"),
            ([0xEF, 0xBB, 0xBF, 0x7B, 0x7D], 0, "unexpected character byte 0xef, expected a value"),
            ([0x31, 0x00], 1, "unexpected text after the JSON value"),
            ([0x0C, 0x31], 0, "unexpected character byte 0xc, expected a value"),
        ] as [([UInt8], Int, String)])
    func refusedBytes(bytes: [UInt8], offset: Int, reason: String) throws {
        let error = try syntaxError(bytes)
        #expect(error.offset == offset)
        #expect(error.reason == reason)
    }

    @Test func depthBeyondThirtyTwoIsRefused() throws {
        let arrays = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        let arrayError = try syntaxError(arrays)
        #expect(arrayError.offset == 32)
        #expect(arrayError.reason == "nesting deeper than 32 levels")

        let objects = String(repeating: #"{"a":"#, count: 32) + "{}" + String(repeating: "}", count: 32)
        let objectError = try syntaxError(objects)
        #expect(objectError.offset == 32 * 5)
        #expect(objectError.reason == "nesting deeper than 32 levels")

        let mixed = String(repeating: #"[{"a":"#, count: 16) + "[]" + String(repeating: "}]", count: 16)
        let mixedError = try syntaxError(mixed)
        #expect(mixedError.offset == 16 * 6)
        #expect(mixedError.reason == "nesting deeper than 32 levels")

        let deep = String(repeating: "[", count: 1000)
        let deepError = try syntaxError(deep)
        #expect(deepError.offset == 32)
        #expect(deepError.reason == "nesting deeper than 32 levels")
    }
}

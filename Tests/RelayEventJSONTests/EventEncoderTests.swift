import RelayEventJSON
import TestTiers
import Testing

@testable import RelayCore

/// `EventEncoder`: the JSON the log prints (`wal dump`), and that `EventDecoder` reads it back unchanged.
@Suite(.tier(.fast))
struct EventEncoderTests {
    static let defaultTime = EventTime(nanosecondsSinceEpoch: 1_795_255_200_123_000_000, utcOffsetMinutes: nil, fractionDigits: 3)

    private func decode(_ text: String) throws(EventInputError) -> Event {
        try EventDecoder.decode(text, defaultTime: Self.defaultTime)
    }

    /// Input lines in the ingest format; each must survive decode → encode → decode.
    static let inputs: [String] = [
        #"{"kind":"track","action":"impression","messageId":"55336","deliveryId":"f0190"}"#,
        #"{"kind":"track","action":"open","_mId":"12345","_dId":"f0190","time":"2026-11-21T10:00:00Z"}"#,
        #"{"kind":"track","action":"click","messageId":"673096100","deliveryId":"d-1.x_~","integrationKey":"key","time":"2026-11-21T12:00:00.5+02:00"}"#,
        #"{"kind":"track","action":"open","messageId":"-1709416000","deliveryId":"f0190","time":"1969-12-31T23:59:59.999999999Z"}"#,
        #"{"kind":"track","action":"open","messageId":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","deliveryId":"f0190","time":"2026-11-21T04:30:00.123-05:30"}"#,
        #"{"kind":"track","action":"open","messageId":"6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6","deliveryId":"F0190"}"#,
        #"{"kind":"track","action":"open","messageId":"6b6499A8-9D43-4bc5-acf0-b6aeb96846f6","deliveryId":"f0190"}"#,
        #"{"kind":"track","action":"impression","messageId":"007","deliveryId":"0"}"#,
        #"{"kind":"track","action":"impression","messageId":"9223372036854775807","deliveryId":"x"}"#,
        #"{"kind":"track","action":"impression","messageId":"-9223372036854775808","deliveryId":"x"}"#,
        #"{"kind":"track","action":"impression","messageId":"-0","deliveryId":"x","time":"2026-11-21T10:00:00.000000000Z"}"#,
        #"{"kind":"track","action":"impression","messageId":"0","deliveryId":"x","time":"2026-11-21T10:00:00+00:00"}"#,
        #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t"}"#,
        #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","userKey":""}"#,
        #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{}}"#,
        #"{"kind":"register","platform":"ios","integrationKey":"key","registrationToken":"70757368546f6b656e","userKey":"user@example.com","deviceName":"iPhone de Zoé","deviceModel":"iPhone15,2","deviceBrand":"Apple","deviceManufacturer":"Apple","osName":"iOS","osVersion":"iOS 17.2","osLanguage":"fr-FR","additionalParams":{"email":"email@email.com","userPoints":3233},"time":"2026-11-21T10:00:00.1Z"}"#,
        #"{"kind":"register","platform":"android","integrationKey":"testIntegrationKey","registrationToken":"testToken","userKey":"testUser","deviceImei":"12345","deviceName":"mockDevice","deviceModel":"mockDeviceName","deviceBrand":"mockDeviceBrand","deviceManufacturer":"mockDeviceManufacturer","osName":"android","osVersion":"mockOSName mockOSVersion","osLanguage":"mocklocale","additionalParams":{"key":"value"}}"#,
        #"{"time":"2026-11-21T10:00:00+01:00","additionalParams":{"z":1.5e3,"a":true,"m":false,"b":"","q":"\"\\\/\b\f\n\r\t\u0001\u00e9\uD83D\uDE00"},"osLanguage":"en","registrationToken":"fcm:APA91b-x_y","integrationKey":"k","platform":"android","kind":"register","deviceImei":""}"#,
        #"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","deviceName":"line\nbreak \"quoted\" back\\slash \u0000 nul \u001f","osVersion":"Android 14"}"#,
        #"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","additionalParams":{"n1":-0,"n2":1E+10,"n3":-12.5e-3,"n4":123456789012345678901234567890}}"#,
    ]

    @Test(arguments: inputs)
    func roundTripsThroughTheDecoder(line: String) throws {
        let event = try decode(line)
        let json = EventEncoder.json(event)
        let again = try decode(json)
        #expect(again == event)
        // Encoding is stable: the canonical text encodes to itself.
        #expect(EventEncoder.json(again) == json)
    }

    /// Events built in code, including times whose parts the decoder never produces directly.
    static let builtEvents: [Event] = {
        var events: [Event] = []
        let times = [
            EventTime(nanosecondsSinceEpoch: 0, utcOffsetMinutes: nil, fractionDigits: 0),
            EventTime(nanosecondsSinceEpoch: 1_795_255_200_123_000_000, utcOffsetMinutes: nil, fractionDigits: 3),
            EventTime(nanosecondsSinceEpoch: 1_795_255_200_123_456_789, utcOffsetMinutes: -330, fractionDigits: 9),
            EventTime(nanosecondsSinceEpoch: -2_208_988_800_000_000_000, utcOffsetMinutes: 60, fractionDigits: 0),
            EventTime(nanosecondsSinceEpoch: Int64.max, utcOffsetMinutes: nil, fractionDigits: 9),
            EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000, utcOffsetMinutes: 23 * 60 + 59, fractionDigits: 1),
        ]
        for (index, time) in times.enumerated() {
            let action = TrackingAction.allCases[index % 3]
            events.append(
                .tracking(
                    TrackingEvent(
                        action: action, messageId: MessageID(decimal: Int64(index) - 3), deliveryId: "d\(index)",
                        integrationKey: index.isMultiple(of: 2) ? "key" : nil, time: time)))
            events.append(
                .registration(
                    Registration(
                        platform: index.isMultiple(of: 2) ? .ios : .android, integrationKey: "k\(index)", registrationToken: "t\(index)",
                        userKey: index == 0 ? "" : "u", deviceImei: index.isMultiple(of: 2) ? nil : "35\(index)",
                        additionalParams: index == 1
                            ? nil
                            : [
                                AdditionalParameter(name: "i", value: .number(String(index))),
                                AdditionalParameter(name: "s", value: .string("v\(index)")),
                            ],
                        time: time)))
        }
        return events
    }()

    @Test(arguments: builtEvents)
    func builtEventsRoundTrip(event: Event) throws {
        #expect(try decode(EventEncoder.json(event)) == event)
    }

    @Test func exactTrackingText() throws {
        let event = try decode(
            #"{"_dId":"f0190","time":"2026-11-21T12:00:00.250+02:00","action":"click","kind":"track","integrationKey":"key-1","_mId":"-1709416000"}"#
        )
        #expect(
            EventEncoder.json(event, sequence: 7)
                == #"{"seq":7,"kind":"track","action":"click","messageId":"-1709416000","deliveryId":"f0190","integrationKey":"key-1","time":"2026-11-21T12:00:00.250+02:00"}"#
        )
        #expect(
            EventEncoder.json(event)
                == #"{"kind":"track","action":"click","messageId":"-1709416000","deliveryId":"f0190","integrationKey":"key-1","time":"2026-11-21T12:00:00.250+02:00"}"#
        )
        // Without integrationKey or time: the key is left out, the default time is written.
        let minimal = try decode(#"{"kind":"track","action":"impression","messageId":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","deliveryId":"f0190"}"#)
        #expect(
            EventEncoder.json(minimal, sequence: 18_446_744_073_709_551_615)
                == #"{"seq":18446744073709551615,"kind":"track","action":"impression","messageId":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","deliveryId":"f0190","time":"2026-11-21T10:00:00.123Z"}"#
        )
    }

    @Test func exactRegistrationText() throws {
        // Fields given out of order come out in the canonical order.
        let event = try decode(
            #"{"additionalParams":{"key":"value","points":3233,"vip":true,"off":false},"osLanguage":"mocklocale","osVersion":"mockOSName mockOSVersion","osName":"android","deviceManufacturer":"mockDeviceManufacturer","deviceBrand":"mockDeviceBrand","deviceModel":"mockDeviceName","deviceName":"mockDevice","deviceImei":"12345","userKey":"","registrationToken":"testToken","integrationKey":"testIntegrationKey","platform":"android","kind":"register","time":"2026-11-21T04:30:00.000123-05:30"}"#
        )
        #expect(
            EventEncoder.json(event, sequence: 1)
                == #"{"seq":1,"kind":"register","platform":"android","integrationKey":"testIntegrationKey","registrationToken":"testToken","userKey":"","deviceImei":"12345","deviceName":"mockDevice","deviceModel":"mockDeviceName","deviceBrand":"mockDeviceBrand","deviceManufacturer":"mockDeviceManufacturer","osName":"android","osVersion":"mockOSName mockOSVersion","osLanguage":"mocklocale","additionalParams":{"key":"value","points":3233,"vip":true,"off":false},"time":"2026-11-21T04:30:00.000123-05:30"}"#
        )
        let minimal = try decode(#"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","time":"2026-11-21T10:00:00Z"}"#)
        #expect(
            EventEncoder.json(minimal)
                == #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","time":"2026-11-21T10:00:00Z"}"#)
        let empty = try decode(
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{},"time":"2026-11-21T10:00:00Z"}"#)
        #expect(
            EventEncoder.json(empty)
                == #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{},"time":"2026-11-21T10:00:00Z"}"#
        )
    }

    @Test func stringsAreEscaped() throws {
        let registration = Registration(
            platform: .android, integrationKey: "k", registrationToken: "t",
            deviceName: "a\"b\\c\nd\re\tf\u{08}g\u{0C}h\u{01}i\u{1F}jé😀/",
            additionalParams: [AdditionalParameter(name: "q\"", value: .string("\u{0}"))],
            time: EventTime(nanosecondsSinceEpoch: 0, utcOffsetMinutes: nil, fractionDigits: 0))
        let json = EventEncoder.json(.registration(registration))
        #expect(
            json
                == #"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","deviceName":"a\"b\\c\nd\re\tf\bg\fh\u0001i\u001fjé😀/","additionalParams":{"q\"":"\u0000"},"time":"1970-01-01T00:00:00Z"}"#
        )
        #expect(try decode(json) == .registration(registration))
    }

    @Test func jsonTextQuoting() {
        #expect(JSONText.quoted("") == #""""#)
        #expect(JSONText.quoted("plain é") == #""plain é""#)
        #expect(JSONText.quoted("\u{7F}") == "\"\u{7F}\"")
        #expect(JSONText.quoted("\u{0B}") == #""\u000b""#)
        var out = "x="
        JSONText.appendQuoted("a\"b", to: &out)
        #expect(out == #"x="a\"b""#)
    }
}

import CampaignProtocol
import RelayEventJSON
import TestTiers
import Testing

@testable import RelayCore

/// `EventDecoder`: the relay's JSON event format, every field, and the exact rejection messages.
@Suite(.tier(.fast))
struct EventDecoderTests {
    /// The time given to events without a `time` field.
    static let defaultTime = EventTime(nanosecondsSinceEpoch: 1_795_255_200_123_000_000, utcOffsetMinutes: nil, fractionDigits: 3)

    private func decode(_ text: String) throws(EventInputError) -> Event {
        try EventDecoder.decode(text, defaultTime: Self.defaultTime)
    }

    private func rejection(_ text: String) throws -> EventInputError {
        try #require(throws: EventInputError.self) { try EventDecoder.decode(text, defaultTime: Self.defaultTime) }
    }

    private func tracking(_ text: String) throws -> TrackingEvent {
        let event = try decode(text)
        guard case .tracking(let hit) = event else {
            Issue.record("expected a tracking event, got \(event)")
            throw EventInputError(field: nil, "not a tracking event")
        }
        return hit
    }

    private func registration(_ text: String) throws -> Registration {
        let event = try decode(text)
        guard case .registration(let registration) = event else {
            Issue.record("expected a registration, got \(event)")
            throw EventInputError(field: nil, "not a registration")
        }
        return registration
    }

    static let trackingAllowed = "kind, action, messageId, _mId, deliveryId, _dId, integrationKey, time"
    static let registrationAllowed =
        "kind, platform, integrationKey, registrationToken, userKey, deviceImei, deviceName, deviceModel, deviceBrand, deviceManufacturer, osName, osVersion, osLanguage, additionalParams, time, sdkForm"

    // MARK: Tracking

    @Test func trackingWithEveryField() throws {
        let hit = try tracking(
            #"{"kind":"track","action":"click","messageId":"55336","deliveryId":"f0190","integrationKey":"key-1","time":"2026-11-21T12:00:00.250+02:00"}"#
        )
        #expect(hit.action == .click)
        #expect(hit.messageId.text == "55336")
        #expect(hit.messageId.form == .decimal(55336))
        #expect(hit.messageId.wireForm == "d828")
        #expect(hit.deliveryId == "f0190")
        #expect(hit.integrationKey == "key-1")
        #expect(hit.time == EventTime(nanosecondsSinceEpoch: 1_795_255_200_250_000_000, utcOffsetMinutes: 120, fractionDigits: 3))
        let expected = TrackingEvent(
            action: .click, messageId: try MessageID("55336"), deliveryId: "f0190", integrationKey: "key-1",
            time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_250_000_000, utcOffsetMinutes: 120, fractionDigits: 3))
        #expect(
            try decode(
                #"{"kind":"track","action":"click","messageId":"55336","deliveryId":"f0190","integrationKey":"key-1","time":"2026-11-21T12:00:00.250+02:00"}"#
            ) == .tracking(expected))
    }

    @Test(arguments: TrackingAction.allCases)
    func everyAction(action: TrackingAction) throws {
        let hit = try tracking(#"{"kind":"track","action":"\#(action.rawValue)","messageId":"1","deliveryId":"d"}"#)
        #expect(hit.action == action)
    }

    @Test func wireTags() {
        #expect(TrackingAction.impression.wireTag.rawValue == 1)
        #expect(TrackingAction.open.wireTag.rawValue == 2)
        #expect(TrackingAction.click.wireTag.rawValue == 2)
        #expect(TrackingAction.allCases.map(\.rawValue) == ["impression", "open", "click"])
        #expect(Platform.allCases.map(\.rawValue) == ["ios", "android"])
    }

    @Test func minimalTrackingUsesTheDefaultTime() throws {
        let hit = try tracking(#"{"kind":"track","action":"open","messageId":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","deliveryId":"f0190"}"#)
        #expect(
            hit
                == TrackingEvent(
                    action: .open, messageId: try MessageID("6b6499a8-9d43-4bc5-acf0-b6aeb96846f6"), deliveryId: "f0190", integrationKey: nil,
                    time: Self.defaultTime))
        #expect(hit.time == Self.defaultTime)
        #expect(hit.integrationKey == nil)
    }

    @Test func aliasesGiveTheSameEvent() throws {
        let canonical = try decode(
            #"{"kind":"track","action":"impression","messageId":"-1709416000","deliveryId":"f0190","time":"2026-11-21T10:00:00Z"}"#)
        let aliases = try decode(#"{"kind":"track","action":"impression","_mId":"-1709416000","_dId":"f0190","time":"2026-11-21T10:00:00Z"}"#)
        let mixed1 = try decode(#"{"_dId":"f0190","time":"2026-11-21T10:00:00Z","kind":"track","messageId":"-1709416000","action":"impression"}"#)
        let mixed2 = try decode(#"{"kind":"track","_mId":"-1709416000","action":"impression","deliveryId":"f0190","time":"2026-11-21T10:00:00Z"}"#)
        #expect(aliases == canonical)
        #expect(mixed1 == canonical)
        #expect(mixed2 == canonical)
        guard case .tracking(let hit) = aliases else {
            Issue.record("expected a tracking event")
            return
        }
        #expect(hit.messageId.text == "-1709416000")
        #expect(hit.messageId.wireForm == "9a1c61c0")
        #expect(hit.deliveryId == "f0190")
    }

    @Test(arguments: [
        (#""messageId":"1","_mId":"2""#, "messageId", "messageId and _mId are both given; give one"),
        (#""_mId":"2","messageId":"1""#, "messageId", "_mId and messageId are both given; give one"),
        (#""messageId":"1","_mId":"1""#, "messageId", "messageId and _mId are both given; give one"),
        (#""deliveryId":"a","_dId":"b""#, "deliveryId", "deliveryId and _dId are both given; give one"),
        (#""_dId":"b","deliveryId":"a""#, "deliveryId", "_dId and deliveryId are both given; give one"),
    ])
    func aliasAndCanonicalTogetherAreRefused(members: String, field: String, message: String) throws {
        // The other id is given once, so the only problem is the pair.
        let other = field == "messageId" ? #""deliveryId":"d""# : #""messageId":"1""#
        let error = try rejection(#"{"kind":"track","action":"open",\#(members),\#(other)}"#)
        #expect(error.field == field)
        #expect(error.message == message)
    }

    @Test(arguments: [
        (#"{"action":"open","messageId":"1","deliveryId":"d"}"#, "kind", #"kind is required ("track" or "register")"#),
        (#"{}"#, "kind", #"kind is required ("track" or "register")"#),
        (#"{"kind":"tracking","action":"open"}"#, "kind", #"kind "tracking" is not "track" or "register""#),
        (#"{"kind":"Track"}"#, "kind", #"kind "Track" is not "track" or "register""#),
        (#"{"kind":""}"#, "kind", "kind is empty"),
        (#"{"kind":1}"#, "kind", "kind must be a string, found a number"),
        (#"{"kind":null}"#, "kind", "kind must be a string, found null"),
        (#"{"kind":["track"]}"#, "kind", "kind must be a string, found an array"),
        (#"{"kind":"track","messageId":"1","deliveryId":"d"}"#, "action", #"action is required ("impression", "open" or "click")"#),
        (#"{"kind":"track","action":"view","messageId":"1","deliveryId":"d"}"#, "action", #"action "view" is not "impression", "open" or "click""#),
        (#"{"kind":"track","action":"","messageId":"1","deliveryId":"d"}"#, "action", #"action "" is not "impression", "open" or "click""#),
        (#"{"kind":"track","action":"OPEN","messageId":"1","deliveryId":"d"}"#, "action", #"action "OPEN" is not "impression", "open" or "click""#),
        (#"{"kind":"track","action":true,"messageId":"1","deliveryId":"d"}"#, "action", "action must be a string, found a boolean"),
        (#"{"kind":"track","action":"open","deliveryId":"d"}"#, "messageId", "messageId (or _mId) is required"),
        (#"{"kind":"track","action":"open","messageId":"1"}"#, "deliveryId", "deliveryId (or _dId) is required"),
        (#"{"kind":"track","action":"open","messageId":55336,"deliveryId":"d"}"#, "messageId", "messageId must be a string, found a number"),
        (#"{"kind":"track","action":"open","messageId":null,"deliveryId":"d"}"#, "messageId", "messageId must be a string, found null"),
        (#"{"kind":"track","action":"open","messageId":{},"deliveryId":"d"}"#, "messageId", "messageId must be a string, found an object"),
        (#"{"kind":"track","action":"open","messageId":"1","deliveryId":190}"#, "deliveryId", "deliveryId must be a string, found a number"),
        (
            #"{"kind":"track","action":"open","messageId":"a8a","deliveryId":"d"}"#, "messageId",
            #"messageId "a8a" is neither a UUID nor a decimal integer"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1-1-1-1-1","deliveryId":"d"}"#, "messageId",
            #"messageId "1-1-1-1-1" is neither a UUID nor a decimal integer"#
        ),
        (#"{"kind":"track","action":"open","messageId":"","deliveryId":"d"}"#, "messageId", "messageId is empty"),
        (
            #"{"kind":"track","action":"open","messageId":"99999999999999999999","deliveryId":"d"}"#, "messageId",
            #"messageId "99999999999999999999" is a decimal integer outside the 64-bit range"#
        ),
        (#"{"kind":"track","action":"open","messageId":"1","deliveryId":""}"#, "deliveryId", "deliveryId is empty"),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"f0190,2"}"#, "deliveryId",
            #"deliveryId "f0190,2" contains "," (allowed: letters, digits, '-', '.', '_', '~')"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"f0 190"}"#, "deliveryId",
            #"deliveryId "f0 190" contains " " (allowed: letters, digits, '-', '.', '_', '~')"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"a&b=c"}"#, "deliveryId",
            #"deliveryId "a&b=c" contains "&" (allowed: letters, digits, '-', '.', '_', '~')"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d\n"}"#, "deliveryId",
            #"deliveryId "d\n" contains "\n" (allowed: letters, digits, '-', '.', '_', '~')"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"dé"}"#, "deliveryId",
            #"deliveryId "dé" contains "é" (allowed: letters, digits, '-', '.', '_', '~')"#
        ),
        (#"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","integrationKey":""}"#, "integrationKey", "integrationKey is empty"),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","integrationKey":"a b"}"#, "integrationKey",
            #"integrationKey "a b" contains a space or control character (U+20)"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","integrationKey":7}"#, "integrationKey",
            "integrationKey must be a string, found a number"
        ),
        (#"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","time":""}"#, "time", "time is empty"),
        (#"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","time":1795255200}"#, "time", "time must be a string, found a number"),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","time":"2026-11-21T10:00:00"}"#, "time",
            #"time "2026-11-21T10:00:00" is not an RFC 3339 timestamp: expected 'Z' or an offset ±HH:MM after the time"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","time":"2023-02-29T10:00:00Z"}"#, "time",
            #"time "2023-02-29T10:00:00Z" is not an RFC 3339 timestamp: day 29 does not exist in that month"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","foo":1}"#, "foo",
            #"unknown field "foo" for kind "track" (allowed: \#(trackingAllowed))"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","platform":"ios"}"#, "platform",
            #"unknown field "platform" for kind "track" (allowed: \#(trackingAllowed))"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","seq":1}"#, "seq",
            #"unknown field "seq" for kind "track" (allowed: \#(trackingAllowed))"#
        ),
        (
            #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","MessageId":"1"}"#, "MessageId",
            #"unknown field "MessageId" for kind "track" (allowed: \#(trackingAllowed))"#
        ),
    ])
    func trackingRejections(json: String, field: String, message: String) throws {
        let error = try rejection(json)
        #expect(error.field == field)
        #expect(error.message == message)
    }

    /// The alias the sender used is named in the message, so the person knows which field to fix.
    @Test func rejectionsOfAliasedValuesNameTheAlias() throws {
        let bad = try rejection(#"{"kind":"track","action":"open","_mId":"a8a","_dId":"d"}"#)
        #expect(bad.message == #"_mId "a8a" is neither a UUID nor a decimal integer"#)
        let number = try rejection(#"{"kind":"track","action":"open","_mId":55336,"_dId":"d"}"#)
        #expect(number.message == "_mId must be a string, found a number")
        let comma = try rejection(#"{"kind":"track","action":"open","_mId":"1","_dId":"a,b"}"#)
        #expect(comma.message == #"_dId "a,b" contains "," (allowed: letters, digits, '-', '.', '_', '~')"#)
        let empty = try rejection(#"{"kind":"track","action":"open","_mId":"1","_dId":""}"#)
        #expect(empty.message == "_dId is empty")
    }

    @Test func deliveryIdCharactersAndLength() throws {
        let allowed = "azAZ09-._~"
        #expect(try tracking(#"{"kind":"track","action":"open","messageId":"1","deliveryId":"\#(allowed)"}"#).deliveryId == allowed)
        let longest = String(repeating: "f", count: 255)
        #expect(try tracking(#"{"kind":"track","action":"open","messageId":"1","deliveryId":"\#(longest)"}"#).deliveryId == longest)
        let error = try rejection(#"{"kind":"track","action":"open","messageId":"1","deliveryId":"\#(longest)f"}"#)
        #expect(error.field == "deliveryId")
        #expect(error.message == "deliveryId is longer than 255 bytes")
    }

    @Test func firstProblemInDocumentOrderWins() throws {
        // An unknown field before a bad value: the unknown field is reported.
        let unknownFirst = try rejection(#"{"kind":"track","foo":1,"action":"bad"}"#)
        #expect(unknownFirst.field == "foo")
        // A bad action before an unknown field: the action is reported.
        let actionFirst = try rejection(#"{"kind":"track","action":"bad","foo":1}"#)
        #expect(actionFirst.field == "action")
        #expect(actionFirst.message == #"action "bad" is not "impression", "open" or "click""#)
    }

    // MARK: Registration

    @Test func androidRegistrationWithEveryField() throws {
        let json = #"""
            {"kind":"register","platform":"android","integrationKey":"testIntegrationKey","registrationToken":"testToken",\#
            "userKey":"testUser","deviceImei":"12345","deviceName":"mockDevice","deviceModel":"mockDeviceName",\#
            "deviceBrand":"mockDeviceBrand","deviceManufacturer":"mockDeviceManufacturer","osName":"android",\#
            "osVersion":"mockOSName mockOSVersion","osLanguage":"mocklocale",\#
            "additionalParams":{"key":"value","points":3233,"vip":true,"ratio":1.5e3,"off":false},\#
            "time":"2026-11-21T04:30:00.123456-05:30"}
            """#
        let registration = try registration(json)
        #expect(registration.platform == .android)
        #expect(registration.integrationKey == "testIntegrationKey")
        #expect(registration.registrationToken == "testToken")
        #expect(registration.userKey == "testUser")
        #expect(registration.deviceImei == "12345")
        #expect(registration.deviceName == "mockDevice")
        #expect(registration.deviceModel == "mockDeviceName")
        #expect(registration.deviceBrand == "mockDeviceBrand")
        #expect(registration.deviceManufacturer == "mockDeviceManufacturer")
        #expect(registration.osName == "android")
        #expect(registration.osVersion == "mockOSName mockOSVersion")
        #expect(registration.osLanguage == "mocklocale")
        #expect(
            registration.additionalParams == [
                AdditionalParameter(name: "key", value: .string("value")),
                AdditionalParameter(name: "points", value: .number("3233")),
                AdditionalParameter(name: "vip", value: .bool(true)),
                AdditionalParameter(name: "ratio", value: .number("1.5e3")),
                AdditionalParameter(name: "off", value: .bool(false)),
            ])
        #expect(registration.time == EventTime(nanosecondsSinceEpoch: 1_795_255_200_123_456_000, utcOffsetMinutes: -330, fractionDigits: 6))
        let expected = Registration(
            platform: .android, integrationKey: "testIntegrationKey", registrationToken: "testToken", userKey: "testUser",
            deviceImei: "12345", deviceName: "mockDevice", deviceModel: "mockDeviceName", deviceBrand: "mockDeviceBrand",
            deviceManufacturer: "mockDeviceManufacturer", osName: "android", osVersion: "mockOSName mockOSVersion", osLanguage: "mocklocale",
            additionalParams: [
                AdditionalParameter(name: "key", value: .string("value")),
                AdditionalParameter(name: "points", value: .number("3233")),
                AdditionalParameter(name: "vip", value: .bool(true)),
                AdditionalParameter(name: "ratio", value: .number("1.5e3")),
                AdditionalParameter(name: "off", value: .bool(false)),
            ],
            time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_123_456_000, utcOffsetMinutes: -330, fractionDigits: 6))
        #expect(try decode(json) == .registration(expected))
    }

    @Test func iosRegistrationWithEveryField() throws {
        let registration = try registration(
            #"{"kind":"register","platform":"ios","integrationKey":"key","registrationToken":"70757368546f6b656e","userKey":"","deviceName":"iPhone de Zoé","deviceModel":"iPhone15,2","deviceBrand":"Apple","deviceManufacturer":"Apple","osName":"iOS","osVersion":"iOS 17.2","osLanguage":"fr-FR","additionalParams":{"email":"email@email.com","userPoints":3233},"time":"2026-11-21T10:00:00Z"}"#
        )
        #expect(
            registration
                == Registration(
                    platform: .ios, integrationKey: "key", registrationToken: "70757368546f6b656e", userKey: "", deviceImei: nil,
                    deviceName: "iPhone de Zoé", deviceModel: "iPhone15,2", deviceBrand: "Apple", deviceManufacturer: "Apple", osName: "iOS",
                    osVersion: "iOS 17.2", osLanguage: "fr-FR",
                    additionalParams: [
                        AdditionalParameter(name: "email", value: .string("email@email.com")),
                        AdditionalParameter(name: "userPoints", value: .number("3233")),
                    ],
                    time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000, utcOffsetMinutes: nil, fractionDigits: 0)))
        // An empty userKey (anonymous user) is kept apart from a missing one.
        #expect(registration.userKey == "")
        #expect(registration.deviceImei == nil)
    }

    @Test func minimalRegistration() throws {
        let registration = try registration(#"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t"}"#)
        #expect(registration == Registration(platform: .ios, integrationKey: "k", registrationToken: "t", time: Self.defaultTime))
        #expect(registration.userKey == nil)
        #expect(registration.deviceName == nil)
        #expect(registration.additionalParams == nil)
        #expect(registration.time == Self.defaultTime)
    }

    @Test func emptyAdditionalParamsAreKeptApartFromMissingOnes() throws {
        let empty = try registration(#"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","additionalParams":{}}"#)
        #expect(empty.additionalParams == [])
        let missing = try registration(#"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t"}"#)
        #expect(missing.additionalParams == nil)
        #expect(Event.registration(empty) != Event.registration(missing))
    }

    @Test func additionalParamsKeepTheirOrderAndTypes() throws {
        let registration = try registration(
            #"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","additionalParams":{"z":"last?","a":-0.5,"m":false,"b":"","n":10,"y":true,"e":"a\"b"}}"#
        )
        #expect(
            registration.additionalParams == [
                AdditionalParameter(name: "z", value: .string("last?")),
                AdditionalParameter(name: "a", value: .number("-0.5")),
                AdditionalParameter(name: "m", value: .bool(false)),
                AdditionalParameter(name: "b", value: .string("")),
                AdditionalParameter(name: "n", value: .number("10")),
                AdditionalParameter(name: "y", value: .bool(true)),
                AdditionalParameter(name: "e", value: .string("a\"b")),
            ])
        #expect(registration.additionalParams?.map(\.value.wireText) == ["last?", "-0.5", "false", "", "10", "true", "a\"b"])
    }

    @Test func additionalParamsLimits() throws {
        let sixtyFour = (1...64).map { #""p\#($0)":\#($0)"# }.joined(separator: ",")
        let accepted = try registration(
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{\#(sixtyFour)}}"#)
        #expect(accepted.additionalParams?.count == 64)
        #expect(accepted.additionalParams?.last == AdditionalParameter(name: "p64", value: .number("64")))
        let error = try rejection(
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{\#(sixtyFour),"p65":65}}"#)
        #expect(error.field == "additionalParams")
        #expect(error.message == "additionalParams has more than 64 entries")
    }

    @Test func fieldLengthLimit() throws {
        let longest = String(repeating: "u", count: 4096)
        #expect(
            try registration(#"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","userKey":"\#(longest)"}"#).userKey
                == longest)
        let error = try rejection(#"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","userKey":"\#(longest)u"}"#)
        #expect(error.field == "userKey")
        #expect(error.message == "userKey is longer than 4096 bytes")
        let param = try rejection(
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{"x":"\#(longest)u"}}"#)
        #expect(param.field == "additionalParams.x")
        #expect(param.message == "additionalParams.x is longer than 4096 bytes")
        let name = try rejection(
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{"\#(longest)u":"x"}}"#)
        #expect(name.field == "additionalParams")
        #expect(name.message == "an additionalParams name is longer than 4096 bytes")
    }

    @Test(arguments: [
        (#"{"kind":"register","integrationKey":"k","registrationToken":"t"}"#, "platform", #"platform is required ("ios" or "android")"#),
        (
            #"{"kind":"register","platform":"windows","integrationKey":"k","registrationToken":"t"}"#, "platform",
            #"platform "windows" is not "ios" or "android""#
        ),
        (
            #"{"kind":"register","platform":"iOS","integrationKey":"k","registrationToken":"t"}"#, "platform",
            #"platform "iOS" is not "ios" or "android""#
        ),
        (#"{"kind":"register","platform":1,"integrationKey":"k","registrationToken":"t"}"#, "platform", "platform must be a string, found a number"),
        (#"{"kind":"register","platform":"ios","registrationToken":"t"}"#, "integrationKey", "integrationKey is required for a registration"),
        (#"{"kind":"register","platform":"ios","integrationKey":"k"}"#, "registrationToken", "registrationToken is required for a registration"),
        (#"{"kind":"register","platform":"ios","integrationKey":"","registrationToken":"t"}"#, "integrationKey", "integrationKey is empty"),
        (#"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":""}"#, "registrationToken", "registrationToken is empty"),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":["t"]}"#, "registrationToken",
            "registrationToken must be a string, found an array"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","userKey":null}"#, "userKey",
            "userKey must be a string, found null"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","osVersion":17.2}"#, "osVersion",
            "osVersion must be a string, found a number"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","deviceName":false}"#, "deviceName",
            "deviceName must be a string, found a boolean"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{"x":{"y":1}}}"#,
            "additionalParams.x", "additionalParams.x must be a string, number or boolean, found an object"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{"a":"1","x":[1]}}"#,
            "additionalParams.x", "additionalParams.x must be a string, number or boolean, found an array"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{"x":null}}"#, "additionalParams.x",
            "additionalParams.x must be a string, number or boolean, found null"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":{"":"v"}}"#, "additionalParams",
            "additionalParams has an entry with an empty name"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":"a=b"}"#, "additionalParams",
            "additionalParams must be an object, found a string"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":[]}"#, "additionalParams",
            "additionalParams must be an object, found an array"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","additionalParams":null}"#, "additionalParams",
            "additionalParams must be an object, found null"
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","time":"2026-11-21T10:00:00+01"}"#, "time",
            #"time "2026-11-21T10:00:00+01" is not an RFC 3339 timestamp: expected the offset as ±HH:MM"#
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","messageId":"1"}"#, "messageId",
            #"unknown field "messageId" for kind "register" (allowed: \#(registrationAllowed))"#
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","imei":"1"}"#, "imei",
            #"unknown field "imei" for kind "register" (allowed: \#(registrationAllowed))"#
        ),
        (
            #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","mobileAppUuid":"k"}"#, "mobileAppUuid",
            #"unknown field "mobileAppUuid" for kind "register" (allowed: \#(registrationAllowed))"#
        ),
    ])
    func registrationRejections(json: String, field: String, message: String) throws {
        let error = try rejection(json)
        #expect(error.field == field)
        #expect(error.message == message)
    }

    @Test func optionalTextFieldsMayHoldAnyText() throws {
        let registration = try registration(
            #"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","deviceName":"Zoé's \"phone\"\n\ttab","osVersion":"Android 14","userKey":" spaced "}"#
        )
        #expect(registration.deviceName == "Zoé's \"phone\"\n\ttab")
        #expect(registration.osVersion == "Android 14")
        #expect(registration.userKey == " spaced ")
    }

    // MARK: Whole-document problems

    @Test(arguments: [
        ("[]", "an event must be a JSON object, found an array"),
        (#""track""#, "an event must be a JSON object, found a string"),
        ("42", "an event must be a JSON object, found a number"),
        ("null", "an event must be a JSON object, found null"),
        (#"{"kind":"track",}"#, "invalid JSON at byte 16: expected a member name in double quotes"),
        (#"{"kind":"track","kind":"track"}"#, #"invalid JSON at byte 16: duplicate member "kind""#),
        ("", "invalid JSON at byte 0: unexpected end of input, expected a value"),
        (#"{"kind":"track"} {}"#, "invalid JSON at byte 17: unexpected text after the JSON value"),
    ])
    func wholeDocumentRejections(json: String, message: String) throws {
        let error = try rejection(json)
        #expect(error.field == nil)
        #expect(error.message == message)
    }

    @Test func decodingBytesAndParsedValuesAgrees() throws {
        let json = #"{"kind":"track","action":"open","_mId":"12345","_dId":"f0190","time":"2026-11-21T10:00:00Z"}"#
        let fromString = try decode(json)
        let fromValue = try EventDecoder.decode(try JSONParser.parse(json), defaultTime: Self.defaultTime)
        let bytes = Array(json.utf8)
        let fromBytes = try bytes.withUnsafeBufferPointer { buffer throws(EventInputError) in
            try EventDecoder.decode(buffer, defaultTime: Self.defaultTime)
        }
        #expect(fromValue == fromString)
        #expect(fromBytes == fromString)
        #expect(fromString.time == (try EventTime(rfc3339: "2026-11-21T10:00:00Z")))
    }

    @Test func eventTimeAccessor() throws {
        let hit = try decode(#"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","time":"2026-11-21T12:00:00+02:00"}"#)
        #expect(hit.time.rfc3339 == "2026-11-21T12:00:00+02:00")
        let registration = try decode(#"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t"}"#)
        #expect(registration.time == Self.defaultTime)
    }
}

import CampaignProtocol
import CampaignSDKForm
import RelayCore
import RelayEventJSON
import TestTiers
import Testing

/// The SDK's wire forms, read as Campaign reads them.
@Suite("SDK forms", .tier(.fast))
struct SDKFormTests {
    static let time = EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000)

    @Test("hex ids keep their text on the wire and count under their canonical identity")
    func wireHexIdentity() throws {
        let pairs: [(String, String)] = [
            ("h05", "5"), ("hffffffff9a1c61c0", "-1709416000"), ("h9a1c61c0", "-1709416000"), ("hABC", "2748"), ("habc", "2748"),
            ("h7fffffffffffffff", "9223372036854775807"), ("h8000000000000000", "-9223372036854775808"), ("hffffffff7fffffff", "-2147483649"),
        ]
        for (wire, canonical) in pairs {
            let id = try MessageID(wire)
            #expect(id.form == .hex(UInt64(wire.dropFirst(), radix: 16) ?? 0), "\(wire)")
            #expect(id.wireForm == String(wire.dropFirst()), "\(wire) goes upstream as received")
            #expect(id.identity == (try MessageID(canonical)).identity, "\(wire) ≡ \(canonical)")
        }
        #expect(try MessageID("h05").identity == .integer(5))
        #expect(try MessageID("hffffffff9a1c61c0").identity == .integer(0x9a1c_61c0))
        #expect(try MessageID("6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6").identity == .uuid("6b6499a8-9d43-4bc5-acf0-b6aeb96846f6"))
        #expect(try MessageID("h05").identity != (try MessageID("h06")).identity)
        for invalid in ["h", "h12345678901234567", "hxyz", "H05", "h0x5", "h-5"] {
            #expect(throws: EventInputError.self, "\(invalid)") { try MessageID(invalid) }
        }
    }

    @Test("a hit's id: tag 1 impression, tag 2 open, the message id kept as received")
    func trackingHit() throws {
        let open = try SDKTrackingHit.event(id: "h05,f0190,2", time: Self.time)
        #expect(open.action == .open)
        #expect(open.messageId.text == "h05")
        #expect(open.deliveryId == "f0190")
        let uuid = try SDKTrackingHit.event(id: "h6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6,d,1", time: Self.time)
        #expect(uuid.action == .impression)
        #expect(uuid.messageId.wireForm == "6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6")
        let refusals: [(String, String?)] = [
            ("05,f,1", "id"), ("h05,f", "id"), ("h05,f,3", "tag"), ("hxyz,f,1", "messageId"), ("h,f,1", "messageId"), ("h05,,1", "deliveryId"),
            ("h05,f g,1", "deliveryId"),
        ]
        for (id, field) in refusals {
            let error = try #require(throws: EventInputError.self, "\(id)") { try SDKTrackingHit.event(id: id, time: Self.time) }
            #expect(error.field == field, "\(id): \(error)")
        }
    }

    @Test("a registration form: known fields read, unknown ones reported, the body kept")
    func registrationForm() throws {
        let body =
            "registrationToken=%7Blength+%3D+32%7D&mobileAppUuid=key&userKey=&deviceImei=35&newField=1&userKey=second&additionalParams=%3CadditionalParams%3E%3Cparam%20name%3D%22a%22%20value%3D%22b%22%20%2F%3E%3C%2FadditionalParams%3E&other"
        let form = try SDKRegistrationForm(body: body, platform: .ios, time: Self.time)
        #expect(form.unknownFields == ["newField", "other"])
        let registration = form.registration
        #expect(registration.registrationToken == "{length = 32}")
        #expect(registration.integrationKey == "key")
        #expect(registration.userKey == "", "the first of a repeated name counts")
        #expect(registration.deviceImei == "35")
        #expect(registration.additionalParams == [AdditionalParameter(name: "a", value: .string("b"))])
        #expect(registration.sdkForm == body)
        #expect(registration.platform == .ios)
        #expect(registration.time == Self.time)
        let notXML = try SDKRegistrationForm(
            body: "registrationToken=t&mobileAppUuid=k&additionalParams=%3Cfoo%3E", platform: .android, time: Self.time)
        #expect(notXML.registration.additionalParams == nil)
    }

    @Test(
        "a registration form is refused only when unusable",
        arguments: [
            ("mobileAppUuid=k", "registrationToken", "registrationToken is missing or empty"),
            ("registrationToken=&mobileAppUuid=k", "registrationToken", "registrationToken is missing or empty"),
            ("registrationToken=t", "integrationKey", "mobileAppUuid (the integration key) is missing or empty (IntegrationKeyEmpty)"),
            ("registrationToken=t&mobileAppUuid=", "integrationKey", "mobileAppUuid (the integration key) is missing or empty (IntegrationKeyEmpty)"),
            (
                "registrationToken=%ZZ&mobileAppUuid=k", nil,
                "the body is not form data: pair 1 (field registrationToken, 21 bytes) is not valid percent-encoded UTF-8"
            ),
            (
                "k=v&secret%FF=1&mobileAppUuid=k", nil,
                "the body is not form data: pair 2 (a field, 11 bytes) is not valid percent-encoded UTF-8"
            ),
        ] as [(String, String?, String)])
    func refusals(body: String, field: String?, message: String) throws {
        let error = try #require(throws: EventInputError.self) { try SDKRegistrationForm(body: body, platform: .android, time: Self.time) }
        #expect(error.field == field)
        #expect(error.message == message)
    }

    @Test("a token up to 4 KiB is taken, a longer one refused")
    func tokenLength() throws {
        let longest = String(repeating: "t", count: 4096)
        #expect(
            try SDKRegistrationForm(body: "registrationToken=\(longest)&mobileAppUuid=k", platform: .android, time: Self.time).registration
                .registrationToken == longest)
        #expect(throws: EventInputError.self) {
            try SDKRegistrationForm(body: "registrationToken=\(longest)t&mobileAppUuid=k", platform: .android, time: Self.time)
        }
    }

    @Test("sdkForm in the JSON format gives back the same registration, and nothing may stand beside it")
    func jsonRoundTrip() throws {
        let body = "registrationToken=a+b&mobileAppUuid=key&x=1"
        let event = Event.registration(try SDKRegistrationForm(body: body, platform: .android, time: Self.time).registration)
        let json = EventEncoder.json(event)
        #expect(
            json
                == #"{"kind":"register","platform":"android","sdkForm":"registrationToken=a+b&mobileAppUuid=key&x=1","time":"2026-11-21T10:00:00.000Z"}"#
        )
        #expect(try EventDecoder.decode(json, defaultTime: Self.time) == event)
        let mixed = try #require(throws: EventInputError.self) {
            try EventDecoder.decode(
                #"{"kind":"register","platform":"android","sdkForm":"registrationToken=t&mobileAppUuid=k","userKey":"u"}"#, defaultTime: Self.time)
        }
        #expect(mixed.field == "userKey")
        #expect(mixed.message == "userKey cannot be given with sdkForm (the form body holds every field)")
    }
}

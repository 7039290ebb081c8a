import CampaignProtocol
import CampaignSDKForm
import RelayCore
import TestTiers
import Testing

/// The pieces every side shares (the relay's SDK endpoints, its uploader, the emulator): what one
/// side writes, the other reads back to the same values.
@Suite("Campaign wire rules", .tier(.fast))
struct WireRulesTests {
    static let time = EventTime(nanosecondsSinceEpoch: 1_700_000_000_000_000_000)
    static func host() throws -> CampaignHost { try CampaignHost(parsing: "http://127.0.0.1:9", role: "test") }

    @Test("a tracking hit's id: parsed into its three parts, written back to the same text")
    func trackingHitID() throws {
        let parsed = try TrackingHitID(parsing: "h9a1c61c0,f0190,2")
        #expect(parsed == TrackingHitID(messageID: "9a1c61c0", deliveryID: "f0190", tag: .opened))
        #expect(parsed.description == "h9a1c61c0,f0190,2")
        let refusals: [(String, String?, String)] = [
            ("9a,f,1", "id", #"id "9a,f,1" must start with h: h{messageId},{deliveryId},{tag}"#),
            ("h9a,f", "id", #"id "h9a,f" must be h{messageId},{deliveryId},{tag}"#),
            ("h9a,f,1,2", "id", #"id "h9a,f,1,2" must be h{messageId},{deliveryId},{tag}"#),
            ("h9a,f,0", "tag", #"tag "0" is not 1 (received) or 2 (opened)"#),
            ("h,f,1", "messageId", #"id "h,f,1" has an empty message id"#),
            ("h9a,,2", "deliveryId", #"id "h9a,,2" has an empty delivery id"#),
        ]
        for (text, field, message) in refusals {
            let error = try #require(throws: EventInputError.self, "\(text)") { try TrackingHitID(parsing: text) }
            #expect(error.field == field, "\(text)")
            #expect(error.message == message, "\(text)")
        }
    }

    @Test(
        "the id the uploader writes reads back to the message id's wire form, the delivery and the tag",
        arguments: [
            ("55336", TrackingAction.impression, "d828", TrackingHitID.Tag.received),
            ("-1709416000", .open, "9a1c61c0", .opened),
            ("-9223372036854775808", .click, "8000000000000000", .opened),
            ("6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6", .open, "6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6", .opened),
            ("h00FF", .impression, "00FF", .received),
        ])
    func trackingRoundTrip(messageID: String, action: TrackingAction, wire: String, tag: TrackingHitID.Tag) throws {
        let hit = TrackingEvent(action: action, messageId: try MessageID(messageID), deliveryId: "f0190", time: Self.time)
        let request = CampaignRequest.tracking(hit, host: try Self.host())
        #expect(request.pathAndQuery == "/r/?id=h\(wire),f0190,\(tag.rawValue)")
        let prefix = "/\(CampaignEndpoint.tracking)/?id="
        #expect(request.pathAndQuery.hasPrefix(prefix))
        let parsed = try TrackingHitID(parsing: String(request.pathAndQuery.dropFirst(prefix.count)))
        #expect(parsed == TrackingHitID(messageID: wire, deliveryID: "f0190", tag: tag))
        // What an SDK would send for the same hit reads back as the same message for Campaign.
        let received = try SDKTrackingHit.event(id: parsed.description, time: Self.time)
        #expect(received.messageId.identity == hit.messageId.identity)
        #expect(received.messageId.wireForm == wire)
        #expect(received.action.wireTag == tag)
    }

    @Test("form fields: in order, repeated names kept, a pair without = is an empty value, + is a space")
    func formFields() throws {
        let fields = try FormEncoding.fields("a=1&&b&c=%2B+x&a=2&=v")
        #expect(fields.map(\.name) == ["a", "b", "c", "a", ""])
        #expect(fields.map(\.value) == ["1", "", "+ x", "2", "v"])
        let error = try #require(throws: FormEncoding.MalformedPair.self) { try FormEncoding.fields("a=1&b=%E2%82&c=3") }
        #expect(error.index == 2)
        #expect(error.text == "b=%E2%82")
        #expect(try FormEncoding.fields("").isEmpty)
    }

    @Test(
        "a registration the uploader encodes reads back, field for field, as Campaign and the relay read forms", arguments: [Platform.ios, .android])
    func registrationRoundTrip(platform: Platform) throws {
        var registration = Registration(
            platform: platform, integrationKey: "key 1", registrationToken: "{length = 32, bytes = 0x01}", userKey: "é&=+", time: Self.time
        )
        registration.deviceModel = "Pixel 8"
        registration.additionalParams = [
            AdditionalParameter(name: "b", value: .string("x\"<y>'")), AdditionalParameter(name: "a", value: .number("3")),
        ]
        let request = CampaignRequest.registration(registration, host: try Self.host())
        #expect(request.method == .post)
        #expect(request.pathAndQuery == "/" + CampaignEndpoint.registration(platform))
        #expect(request.headers.map(\.value) == ["application/x-www-form-urlencoded;charset=UTF-8"])
        let body = String(decoding: try #require(request.body), as: UTF8.self)
        let fields = try FormEncoding.fields(body)
        let expectedNames =
            ["registrationToken", "mobileAppUuid", "userKey"] + (platform == .android ? ["deviceImei"] : [])
            + ["deviceName", "deviceModel", "deviceBrand", "deviceManufacturer", "osName", "osVersion", "osLanguage", "additionalParams"]
        #expect(fields.map(\.name) == expectedNames)
        let read = try SDKRegistrationForm(body: body, platform: platform, time: Self.time)
        #expect(read.unknownFields.isEmpty)
        #expect(read.registration.integrationKey == "key 1")
        #expect(read.registration.registrationToken == "{length = 32, bytes = 0x01}")
        #expect(read.registration.userKey == "é&=+")
        #expect(read.registration.deviceModel == "Pixel 8")
        // Every value goes upstream as a string, the iOS dialect sorted by name, Android's in order.
        let names = platform == .ios ? ["a", "b"] : ["b", "a"]
        #expect(read.registration.additionalParams?.map(\.name) == names)
        #expect(read.registration.additionalParams?.first { $0.name == "b" }?.value == .string("x\"<y>'"))
        #expect(read.registration.additionalParams?.first { $0.name == "a" }?.value == .string("3"))
    }
}

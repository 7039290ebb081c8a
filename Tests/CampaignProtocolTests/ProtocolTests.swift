import CampaignEmulator
import CampaignSDKForm
import RelayCore
import RelayForwarding
import RelayTestSupport
import TestTiers
import Testing

@testable import CampaignProtocol

/// The wire format, byte for byte, with the vectors the SDKs' own tests use (docs/campaign-protocol.md).
@Suite("Campaign protocol", .tier(.fast))
struct ProtocolTests {
    static let androidVector =
        "registrationToken=testToken&mobileAppUuid=testIntegrationKey&userKey=testUser&deviceImei=12345&deviceName=mockDevice&deviceModel=mockDeviceName&deviceBrand=mockDeviceBrand&deviceManufacturer=mockDeviceManufacturer&osName=android&osVersion=mockOSName%20mockOSVersion&osLanguage=mocklocale&additionalParams=%3CadditionalParameters%3E%3Cparam%20name%3D%22key%22%20value%3D%22value%22%2F%3E%3C%2FadditionalParameters%3E"

    static let androidRegistration = Registration(
        platform: .android, integrationKey: "testIntegrationKey", registrationToken: "testToken", userKey: "testUser", deviceImei: "12345",
        deviceName: "mockDevice", deviceModel: "mockDeviceName", deviceBrand: "mockDeviceBrand", deviceManufacturer: "mockDeviceManufacturer",
        osName: "android", osVersion: "mockOSName mockOSVersion", osLanguage: "mocklocale",
        additionalParams: [AdditionalParameter(name: "key", value: .string("value"))], time: EventTime(nanosecondsSinceEpoch: 0)
    )

    static let iosRegistration = Registration(
        platform: .ios, integrationKey: "testIntegrationKey", registrationToken: "70757368546f6b656e", userKey: "",
        additionalParams: [
            AdditionalParameter(name: "userPoints", value: .number("3233")), AdditionalParameter(name: "email", value: .string("email@email.com")),
        ],
        time: EventTime(nanosecondsSinceEpoch: 0)
    )

    @Test("the Android vector is the exact 415-byte body")
    func androidBody() throws {
        let host = try CampaignHost(parsing: "http://127.0.0.1:9", role: "test")
        let request = CampaignRequest.registration(Self.androidRegistration, host: host)
        #expect(request.body == Array(Self.androidVector.utf8))
        #expect(request.body?.count == 415)
        #expect(request.pathAndQuery == "/nms/mobile/1/registerAndroid.jssp")
        #expect(request.headers.map(\.value) == ["application/x-www-form-urlencoded;charset=UTF-8"])
    }

    @Test("the iOS vector: params sorted by key, ' />' closings, hex token")
    func iosBody() throws {
        let request = CampaignRequest.registration(Self.iosRegistration, host: try CampaignHost(parsing: "m.example.com", role: "test"))
        let body = String(decoding: request.body ?? [], as: UTF8.self)
        #expect(body.hasPrefix("registrationToken=70757368546f6b656e&mobileAppUuid=testIntegrationKey&userKey=&deviceName=&"))
        #expect(
            body.hasSuffix(
                "&additionalParams=%3CadditionalParams%3E%3Cparam%20name%3D%22email%22%20value%3D%22email%40email.com%22%20%2F%3E%3Cparam%20name%3D%22userPoints%22%20value%3D%223233%22%20%2F%3E%3C%2FadditionalParams%3E"
            ))
        #expect(!body.contains("deviceImei"))
        #expect(request.url == "https://m.example.com/nms/mobile/1/registerIOS.jssp")
        let empty = CampaignRequest.registration(
            Registration(platform: .ios, integrationKey: "k", registrationToken: "t", time: EventTime(nanosecondsSinceEpoch: 0)),
            host: try CampaignHost(parsing: "m", role: "t"))
        #expect(String(decoding: empty.body ?? [], as: UTF8.self).hasSuffix("&additionalParams=%3CadditionalParams%3E%3C%2FadditionalParams%3E"))
    }

    @Test("XML escaping differs by platform and drops line breaks")
    func xmlEscaping() {
        let params = [AdditionalParameter(name: "a'b", value: .string("<x & \"y\">\r\n'z'"))]
        #expect(
            AdditionalParamsXML.xml(params, platform: .ios)
                == "<additionalParams><param name=\"a&#x27;b\" value=\"&lt;x &amp; &quot;y&quot;&gt;&#x27;z&#x27;\" /></additionalParams>")
        #expect(
            AdditionalParamsXML.xml(params, platform: .android)
                == "<additionalParameters><param name=\"a&#39;b\" value=\"&lt;x &amp; &quot;y&quot;&gt;&#39;z&#39;\"/></additionalParameters>")
        // Android keeps the given order, iOS sorts by name.
        let two = [AdditionalParameter(name: "b", value: .bool(true)), AdditionalParameter(name: "a", value: .number("1.5"))]
        #expect(
            AdditionalParamsXML.xml(two, platform: .android)
                == "<additionalParameters><param name=\"b\" value=\"true\"/><param name=\"a\" value=\"1.5\"/></additionalParameters>")
        #expect(
            AdditionalParamsXML.xml(two, platform: .ios)
                == "<additionalParams><param name=\"a\" value=\"1.5\" /><param name=\"b\" value=\"true\" /></additionalParams>")
    }

    @Test("percent-encoding keeps only unreserved characters, upper-case hex, %20 for space")
    func formEncoding() {
        #expect(FormEncoding.encode("a b+c/é~._-Z9") == "a%20b%2Bc%2F%C3%A9~._-Z9")
        #expect(FormEncoding.decode("a+b%20c%C3%A9") == "a b cé")
        #expect(FormEncoding.decode("bad%2") == nil)
        #expect(FormEncoding.decode("%FF") == nil)
    }

    @Test(
        "tracking hits: wire message id, tags 1 and 2",
        arguments: [
            ("55336", TrackingAction.impression, "/r/?id=hd828,f0190,1"),
            ("12345", .open, "/r/?id=h3039,f0190,2"),
            ("673096100", .click, "/r/?id=h281ea1a4,f0190,2"),
            ("-1709416000", .open, "/r/?id=h9a1c61c0,f0190,2"),
            ("6b6499a8-9d43-4bc5-acf0-b6aeb96846f6", .impression, "/r/?id=h6b6499a8-9d43-4bc5-acf0-b6aeb96846f6,f0190,1"),
        ])
    func trackingVectors(messageId: String, action: TrackingAction, expected: String) throws {
        let hit = TrackingEvent(action: action, messageId: try MessageID(messageId), deliveryId: "f0190", time: EventTime(nanosecondsSinceEpoch: 0))
        let request = CampaignRequest.tracking(hit, host: try CampaignHost(parsing: "trackserver", role: "test"))
        #expect(request.pathAndQuery == expected)
        #expect(request.method == .get)
        #expect(request.body == nil)
        #expect(request.url == "https://trackserver" + expected)
    }

    @Test("host settings: default https, http allowed, ports, prefixes, clear errors")
    func hosts() throws {
        #expect(try CampaignHost(parsing: "trackserver", role: "t").url("/r/") == "https://trackserver/r/")
        #expect(try CampaignHost(parsing: "http://127.0.0.1:9000", role: "t").url("/r/") == "http://127.0.0.1:9000/r/")
        #expect(try CampaignHost(parsing: "https://c.example.com:8443/campaign/", role: "t").url("/r/") == "https://c.example.com:8443/campaign/r/")
        #expect(try CampaignHost(parsing: "http://[::1]:8080", role: "t").url("/x") == "http://[::1]:8080/x")
        #expect(throws: CampaignHost.ParseError(description: "--marketing-host is empty")) {
            try CampaignHost(parsing: " ", role: "--marketing-host")
        }
        #expect(throws: CampaignHost.ParseError.self) { try CampaignHost(parsing: "ftp://x", role: "t") }
        #expect(throws: CampaignHost.ParseError.self) { try CampaignHost(parsing: "http://x:99999", role: "t") }
        #expect(throws: CampaignHost.ParseError.self) { try CampaignHost(parsing: "http://x/?q=1", role: "t") }
    }

    @Test("byte for byte over real HTTP: request line, headers and body as the emulator received them")
    func overTheWire() async throws {
        let running = try await RunningEmulator.start()
        defer { Task { await running.stop() } }
        let transport = try HTTPClientTransport()
        let host = try CampaignHost(parsing: running.url, role: "test")
        #expect(await transport.send(.registration(Self.androidRegistration, host: host), timeout: .seconds(10)) == .delivered)
        let hit = TrackingEvent(
            action: .impression, messageId: try MessageID("55336"), deliveryId: "deliveryId", time: EventTime(nanosecondsSinceEpoch: 0))
        #expect(await transport.send(.tracking(hit, host: host), timeout: .seconds(10)) == .delivered)
        await transport.shutdown()
        let requests = await running.emulator.recorder.lastRequests(2)
        try #require(requests.count == 2)
        #expect(requests[0].method == "POST")
        #expect(requests[0].uri == "/nms/mobile/1/registerAndroid.jssp")
        #expect(requests[0].body == Self.androidVector)
        #expect(requests[0].headers.first { $0[0].lowercased() == "content-type" }?[1] == "application/x-www-form-urlencoded;charset=UTF-8")
        #expect(requests[0].headers.first { $0[0].lowercased() == "content-length" }?[1] == "415")
        #expect(requests[0].headers.first { $0[0] == "Host" }?[1] == "127.0.0.1:\(running.port)")
        #expect(requests[1].method == "GET")
        #expect(requests[1].uri == "/r/?id=hd828,deliveryId,1")
        #expect(requests[1].body == "")
        #expect(await running.emulator.recorder.acceptedRegistrations.first?["osVersion"] == "mockOSName mockOSVersion")
    }
}

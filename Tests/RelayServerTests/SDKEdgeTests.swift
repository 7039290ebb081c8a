import CampaignProtocol
import CampaignSDKForm
import Foundation
import RelayCore
import RelayForwarding
import RelayProcessTestSupport
import RelayServer
import RelayTestSupport
import TestTiers
import Testing

/// The SDK edge: what an SDK sends is taken when Campaign would take it, and leaves for Campaign
/// byte for byte as it arrived.
@Suite("The SDK edge: taking what the SDKs send, passing it on unchanged", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct SDKEdgeTests {
    /// A relay forwarding to an emulator, with a test client.
    struct Relay {
        var emulator: RunningEmulator
        var server: RunningServer
        var http: TestHTTPClient

        static func start(_ configure: (inout RelayServerConfiguration) -> Void = { _ in }) async throws -> Relay {
            let emulator = try await RunningEmulator.start()
            let host = try CampaignHost(parsing: emulator.url, role: "test")
            let server = try await RunningServer.start { configuration in
                configuration.trackingHost = host
                configuration.marketingHost = host
                configure(&configuration)
            }
            return Relay(emulator: emulator, server: server, http: TestHTTPClient())
        }

        func stop() async {
            await http.shutdown()
            await server.stop()
            await emulator.stop()
        }

        /// Bodies of the registrations the emulator received, in order.
        func forwardedForms() async -> [String] {
            await emulator.emulator.recorder.lastRequests(1000).filter { $0.method == "POST" }.map(\.body)
        }

        /// The counts of `delivery` once the aggregator has caught up with the log.
        func counts(_ delivery: String) async throws -> [String: Any] {
            var found: [String: Any] = [:]
            try await waitUntil("the aggregator to count every stored event") {
                let durable = try await http.nextSequence(server.url)
                let object =
                    try JSONSerialization.jsonObject(with: Data(try await http.get(server.url + "/v1/deliveries").body.utf8)) as? [String: Any]
                found = (object?["deliveries"] as? [[String: Any]])?.first { $0["deliveryId"] as? String == delivery } ?? [:]
                return (object?["aggregatedThrough"] as? Int).map { $0 + 1 >= durable } ?? false
            }
            return found
        }
    }

    static let iOS13Token = "{length = 32, bytes = 0x9f2c1e5a 6b3d4c7e ... 1a2b3c4d 5e6f7a8b}"

    @Test(
        "lenient registrations get 200 and reach Campaign byte for byte",
        arguments: [
            // The iOS 13 token bug: the token's description, spaces and braces included.
            (
                "ios",
                "registrationToken=" + FormEncoding.encode(iOS13Token)
                    + "&mobileAppUuid=key&userKey=&deviceName=iPhone&additionalParams=%3CadditionalParams%3E%3C%2FadditionalParams%3E"
            ),
            // A field a newer SDK sends, between known ones.
            (
                "android",
                "registrationToken=fcm&mobileAppUuid=key&userKey=u&deviceImei=1&pushPlatform=fcm&deviceName=Pixel&osVersion=Android+15&additionalParams="
            ),
            // deviceImei from an iOS form.
            ("ios", "registrationToken=abcd&mobileAppUuid=key&userKey=ada&deviceImei=35&deviceName=x"),
            // additionalParams that are not the SDK's XML, lower-case escapes, a field given twice.
            ("android", "registrationToken=t%2fu&mobileAppUuid=key&additionalParams=not%20xml&userKey=a&userKey=b"),
        ]
    )
    func lenientRegistrations(platform: String, form: String) async throws {
        let relay = try await Relay.start()
        let path = platform == "ios" ? "/nms/mobile/1/registerIOS.jssp" : "/nms/mobile/1/registerAndroid.jssp"
        let answer = try await relay.http.post(relay.server.url + path, form, headers: formHeaders)
        #expect(answer.status == 200, "\(answer.status) \(answer.body)")
        try await waitUntil("the registration to reach the emulator") { await relay.forwardedForms().count == 1 }
        #expect(await relay.forwardedForms() == [form])
        let request = try #require(await relay.emulator.emulator.recorder.lastRequests(10).first { $0.method == "POST" })
        #expect(request.uri == path)
        await relay.stop()
    }

    @Test("an unknown form field is logged once and counted per name")
    func unknownFieldsAreCounted() async throws {
        let relay = try await Relay.start()
        for token in ["a", "b", "c"] {
            let form = "registrationToken=\(token)&mobileAppUuid=key&pushPlatform=fcm&channel=x"
            #expect(try await relay.http.post(relay.server.url + "/nms/mobile/1/registerAndroid.jssp", form, headers: formHeaders).status == 200)
        }
        let metrics = try await relay.http.get(relay.server.url + "/metrics").body
        #expect(metrics.contains(#"relay_sdk_unknown_fields_total{field="pushPlatform"} 3"#), "\(metrics)")
        #expect(metrics.contains(#"relay_sdk_unknown_fields_total{field="channel"} 3"#))
        await relay.stop()
    }

    @Test("deviceImei on iOS from JSON is kept in the log and left out upstream, as the iOS SDK sends no IMEI")
    func deviceImeiFromJSONOnIOS() async throws {
        let relay = try await Relay.start()
        let event = #"{"kind":"register","platform":"ios","integrationKey":"key","registrationToken":"tok en","userKey":"u","deviceImei":"35"}"#
        let answer = try await relay.http.post(relay.server.url + "/v1/events", "[" + event + "]")
        #expect(answer.status == 200, "\(answer.body)")
        try await waitUntil("the registration to reach the emulator") { await relay.forwardedForms().count == 1 }
        #expect(
            await relay.forwardedForms() == [
                "registrationToken=tok%20en&mobileAppUuid=key&userKey=u&deviceName=&deviceModel=&deviceBrand=&deviceManufacturer=&osName=&osVersion=&osLanguage=&additionalParams=%3CadditionalParams%3E%3C%2FadditionalParams%3E"
            ]
        )
        await relay.stop()
        let dump = try await RelayBinary.run(try RelayBinary.path(), ["wal", "dump", "--data-dir", relay.server.dataDirectory])
        #expect(dump.stdout.contains(#""registrationToken":"tok en","userKey":"u","deviceImei":"35""#), "\(dump.stdout)")
    }

    @Test("hits go upstream exactly as received and count under their canonical identity; tag 2 is an open")
    func hitsPassThrough() async throws {
        let relay = try await Relay.start()
        let received = ["h05", "hffffffff9a1c61c0", "hABC", "h6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6"]
        for id in received {
            #expect(try await relay.http.get(relay.server.url + "/r/?id=\(id),pass,1").status == 200)
        }
        #expect(try await relay.http.get(relay.server.url + "/r/?id=h05,pass,2").status == 200)
        // The same messages in their canonical forms, as a JSON producer gives them.
        let canonical = ["5", "-1709416000", "2748", "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6"]
        let batch = canonical.map { #"{"kind":"track","action":"impression","messageId":"\#($0)","deliveryId":"pass"}"# }.joined(separator: "\n")
        #expect(try await relay.http.post(relay.server.url + "/v1/events", batch, headers: [("Content-Type", "application/x-ndjson")]).status == 200)

        try await waitUntil("9 hits at the emulator") { await relay.emulator.emulator.recorder.acceptedHits == 9 }
        let uris = await relay.emulator.emulator.recorder.lastRequests(100).filter { $0.method == "GET" }.map(\.uri)
        for id in received { #expect(uris.contains("/r/?id=\(id),pass,1"), "\(id) must go upstream unchanged: \(uris)") }
        #expect(uris.contains("/r/?id=h05,pass,2"))
        // The canonical forms go as the SDKs would send them.
        for wire in ["h5", "h9a1c61c0", "habc", "h6b6499a8-9d43-4bc5-acf0-b6aeb96846f6"] {
            #expect(uris.contains("/r/?id=\(wire),pass,1"), "\(wire)")
        }

        let counts = try await relay.counts("pass")
        // Eight impressions of four messages: each wire form is the same message as its canonical form.
        #expect(counts["impressions"] as? Int == 8)
        #expect(counts["uniqueImpressions"] as? Int == 4)
        #expect(counts["opens"] as? Int == 1)
        #expect(counts["clicks"] as? Int == 0)
        await relay.stop()
    }

    @Test("an SDK's re-sent registration is forwarded; a JSON duplicate is skipped within the dedup window")
    func registrationDedupOnlyForJSON() async throws {
        let relay = try await Relay.start()
        let form = "registrationToken=tok&mobileAppUuid=key&userKey=u"
        let json = #"[{"kind":"register","platform":"android","integrationKey":"key","registrationToken":"json-tok","userKey":"u"}]"#
        for _ in 0..<2 {
            #expect(try await relay.http.post(relay.server.url + "/nms/mobile/1/registerAndroid.jssp", form, headers: formHeaders).status == 200)
            #expect(try await relay.http.post(relay.server.url + "/v1/events", json).status == 200)
        }
        // A later registration of the same token, changed (another user key): the lane keeps a
        // token's registrations in log order, so once this one arrives the duplicate before it
        // was decided, skipped or sent.
        let marker = #"[{"kind":"register","platform":"android","integrationKey":"key","registrationToken":"json-tok","userKey":"marker"}]"#
        #expect(try await relay.http.post(relay.server.url + "/v1/events", marker).status == 200)
        try await waitUntil("the later registration of json-tok forwarded") {
            await relay.forwardedForms().contains { $0.hasPrefix("registrationToken=json-tok&mobileAppUuid=key&userKey=marker&") }
        }
        let forms = await relay.forwardedForms()
        #expect(forms.filter { $0 == form }.count == 2, "the SDK deduplicates itself: both go upstream")
        #expect(forms.filter { $0.hasPrefix("registrationToken=json-tok&mobileAppUuid=key&userKey=u&") }.count == 1, "the JSON duplicate is skipped")
        await relay.stop()

        // With a zero window, the JSON duplicate is forwarded too (an opt-out then opt-in must arrive).
        let unwindowed = try await Relay.start { $0.upload.registrationDeduplicationWindow = .zero }
        for _ in 0..<2 { #expect(try await unwindowed.http.post(unwindowed.server.url + "/v1/events", json).status == 200) }
        try await waitUntil("both JSON registrations forwarded") { await unwindowed.forwardedForms().count == 2 }
        await unwindowed.stop()
    }
}

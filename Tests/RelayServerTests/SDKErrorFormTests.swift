import NIOHTTP1
import RelayCore
import RelayForwarding
import RelayProcessTestSupport
import RelayServer
import TestTiers
import Testing

/// Every error of an SDK endpoint is a line of plain text, as Campaign answers (README, "The HTTP
/// API"): the 405 of another method, the 404 of an unknown tenant, 400, 413 and 415, with or
/// without a tenant prefix; the relay's own API keeps answering `{"error":…}`.
@Suite("SDK endpoints answer every error in plain text", .timeLimit(.minutes(10)), .tier(.fast))
struct SDKErrorFormTests {
    static let text = "text/plain; charset=utf-8"
    /// The 404 of tenant `nope`, to a request without the relay's admin token.
    static func unknownTenant(_ name: String = "nope") -> String {
        #"no tenant "\#(name)" on this relay: tenant paths are /{tenant}/r/?id=…, /{tenant}/r/test, /{tenant}/nms/mobile/1/registerIOS.jssp, /{tenant}/nms/mobile/1/registerAndroid.jssp, /{tenant}/v1/events; tenants are [tenant.NAME] tables of serve --config (the relay's admin token gets their names here; campaign-relay config check lists them)"#
    }

    @Test("405, 404, 400, 413 and 415 of /r/, /r/test, /nms/mobile/1/… and their /{tenant}/ forms: text/plain, one line; JSON routes stay JSON")
    func sdkErrorsAreText() async throws {
        let brandA = try TenantName(validating: "brand-a")
        let server = try await RunningServer.start { configuration in
            configuration.aggregates = false
            configuration.maximumFormBytes = 100
            configuration.tenants = [TenantConfiguration(destinations: TenantDestinations(tenant: brandA, trackingHost: nil, marketingHost: nil))]
        }
        let http = TestHTTPClient()
        let ios = "/nms/mobile/1/registerIOS.jssp"
        let android = "/nms/mobile/1/registerAndroid.jssp"
        // (method, path, body, headers, status, Allow, the exact text)
        let cases: [(HTTPMethod, String, String?, [(String, String)], Int, String?, String)] = [
            (.GET, ios, nil, [], 405, "POST", "GET is not allowed on \(ios); allowed: POST"),
            (.GET, android, nil, [], 405, "POST", "GET is not allowed on \(android); allowed: POST"),
            (.PUT, "/brand-a" + ios, "x", [], 405, "POST", "PUT is not allowed on /{tenant}\(ios); allowed: POST"),
            (.POST, "/r/", "x", [], 405, "GET", "POST is not allowed on /r; allowed: GET"),
            (.DELETE, "/brand-a/r/", nil, [], 405, "GET", "DELETE is not allowed on /{tenant}/r; allowed: GET"),
            (.POST, "/r/test", "x", [], 405, "GET", "POST is not allowed on /r/test; allowed: GET"),
            (.GET, "/nope/r/?id=hd828,f0190,1", nil, [], 404, nil, Self.unknownTenant()),
            (.GET, "/nope/r/test", nil, [], 404, nil, Self.unknownTenant()),
            (.POST, "/nope" + android, "registrationToken=t&mobileAppUuid=k", formHeaders, 404, nil, Self.unknownTenant()),
            (.GET, "/nope" + ios, nil, [], 404, nil, Self.unknownTenant()),
            (.GET, "/brand-a/r/?id=hd828,f0190,3", nil, [], 400, nil, #"tag "3" is not 1 (received) or 2 (opened)"#),
            (.POST, "/brand-a" + ios, "mobileAppUuid=k", formHeaders, 400, nil, "registrationToken is missing or empty"),
            (
                .POST, ios, "registrationToken=t&mobileAppUuid=k", [("Content-Type", "application/json")], 415, nil,
                "Content-Type application/json is not form data; send application/x-www-form-urlencoded as the SDKs do"
            ),
            (.POST, android, "registrationToken=" + String(repeating: "t", count: 100), formHeaders, 413, nil, "request body larger than 100 bytes"),
        ]
        for (method, path, body, headers, status, allow, text) in cases {
            let answer = try await http.send(method, server.url + path, body: body.map { Array($0.utf8) }, headers: headers)
            let what = "\(method) \(path)"
            #expect(answer.status == status, "\(what): \(answer.status) \(answer.body)")
            #expect(answer.headers.first(name: "Content-Type") == Self.text, "\(what): \(answer.headers)")
            #expect(answer.body == text + "\n", "\(what): \(answer.body)")
            #expect(answer.headers.first(name: "Allow") == allow, "\(what)")
        }
        // The relay's own API keeps its JSON errors, beside the SDK paths.
        for (method, path, status) in [(HTTPMethod.GET, "/v1/events", 405), (.POST, "/nope/v1/events", 404), (.GET, "/nope/v1/deliveries", 404)] {
            let answer = try await http.send(method, server.url + path, body: method == .POST ? Array("[]".utf8) : nil)
            #expect(answer.status == status, "\(method) \(path): \(answer.status)")
            #expect(answer.headers.first(name: "Content-Type") == "application/json", "\(method) \(path)")
            #expect(answer.body.hasPrefix(#"{"error":"#), "\(method) \(path): \(answer.body)")
        }
        await http.shutdown()
        await server.stop()
    }
}

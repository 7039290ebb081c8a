import Foundation
import RelayCore
import RelayForwarding
import RelayProcessTestSupport
import RelayServer
import TestTiers
import Testing

/// The status report (`GET /v1/status`, and so the status page) shows registrations per app, as
/// `campaign-relay stats` does: per tenant, integration key and platform, the registrations, the
/// distinct tokens, the first and last registration, the most recently active first.
@Suite("The status report's registrations per app", .timeLimit(.minutes(10)), .tier(.fast))
struct StatusRegistrationsTests {
    static func registration(_ platform: String, _ key: String, _ token: String, _ time: String) -> String {
        #"{"kind":"register","platform":"\#(platform)","integrationKey":"\#(key)","registrationToken":"\#(token)","time":"\#(time)"}"#
    }

    /// A time as the counts give it back: to the millisecond.
    static func counted(_ text: String) throws -> String {
        EventTime(nanosecondsSinceEpoch: try EventTime(rfc3339: text).nanosecondsSinceEpoch, fractionDigits: 3).rfc3339
    }

    static func row(_ tenant: String, _ key: String, _ platform: String, registrations: Int, tokens: Int, first: String, last: String) throws
        -> String
    {
        #"{"distinctTokens":\#(tokens),"firstEvent":"\#(try counted(first))","integrationKey":"\#(key)","lastEvent":"\#(try counted(last))","platform":"\#(platform)","registrations":\#(registrations),"tenant":"\#(tenant)"}"#
    }

    @Test(
        "exact counts in /v1/status for every tenant, and in /brand-a/v1/status for brand-a alone; absent with --no-aggregates; the page shows them")
    func registrationsPerApp() async throws {
        let brandA = try TenantName(validating: "brand-a")
        let server = try await RunningServer.start { configuration in
            configuration.tenants = [TenantConfiguration(destinations: TenantDestinations(tenant: brandA, trackingHost: nil, marketingHost: nil))]
        }
        let http = TestHTTPClient()
        let lines = [("Content-Type", "application/x-ndjson")]
        let defaultTenant = [
            Self.registration("ios", "app-ios", "t1", "2026-11-21T09:00:00Z"), Self.registration("ios", "app-ios", "t2", "2026-11-21T09:01:00Z"),
            Self.registration("ios", "app-ios", "t1", "2026-11-21T09:02:00.250Z"),
            Self.registration("android", "app-android", "a1", "2026-11-21T08:00:00Z"),
        ]
        #expect(try await http.post(server.url + "/v1/events", defaultTenant.joined(separator: "\n"), headers: lines).status == 200)
        let brandAEvent = Self.registration("android", "a-app", "b1", "2026-11-21T10:00:00Z")
        #expect(try await http.post(server.url + "/brand-a/v1/events", brandAEvent, headers: lines).status == 200)
        try await eventually("the aggregator to count the five registrations") {
            let object = try JSONSerialization.jsonObject(with: Data(try await http.get(server.url + "/v1/deliveries").body.utf8)) as? [String: Any]
            return object?["aggregatedThrough"] as? Int == 5
        }

        let brandARow = try Self.row(
            "brand-a", "a-app", "android", registrations: 1, tokens: 1, first: "2026-11-21T10:00:00Z", last: "2026-11-21T10:00:00Z")
        let iosRow = try Self.row(
            "default", "app-ios", "ios", registrations: 3, tokens: 2, first: "2026-11-21T09:00:00Z", last: "2026-11-21T09:02:00.250Z")
        let androidRow = try Self.row(
            "default", "app-android", "android", registrations: 1, tokens: 1, first: "2026-11-21T08:00:00Z", last: "2026-11-21T08:00:00Z")
        let everyTenant = try await http.get(server.url + "/v1/status")
        #expect(everyTenant.status == 200)
        #expect(
            everyTenant.body.contains(#","registrations":[\#(brandARow),\#(iosRow),\#(androidRow)],"relayId":"#), "\(everyTenant.body)")
        // The file log: one copy, this machine's disk.
        #expect(everyTenant.body.contains(#""copies":1,"#) && everyTenant.body.contains(#""store":"files""#), "\(everyTenant.body)")
        let brandAOnly = try await http.get(server.url + "/brand-a/v1/status")
        #expect(brandAOnly.body.contains(#","registrations":[\#(brandARow)],"relayId":"#), "\(brandAOnly.body)")
        // The page renders them from the report.
        let page = try await http.get(server.url + "/status").body
        #expect(page.contains(#"<tbody id="registrations"></tbody>"#) && page.contains("const registrations = status.registrations;"))
        await server.stop()

        let notCounting = try await RunningServer.start { $0.aggregates = false }
        let status = try await http.get(notCounting.url + "/v1/status")
        #expect(status.status == 200 && !status.body.contains(#""registrations""#), "\(status.body)")
        await notCounting.stop()
        await http.shutdown()
    }
}

import Foundation
import RelayCore
import RelayForwarding
import RelayProcessTestSupport
import RelayServer
import RelayTestSupport
import TestTiers
import Testing

/// `?reveal=personal-data` and the erasures over HTTP take the relay's own admin token alone
/// (README, `docs/privacy.md`): a tenant's admin token sees its dead letters with their personal
/// data as keyed hashes, gets 403 when it asks for the values, and 403 on `/v1/privacy/erasures`.
@Suite("Personal data over HTTP: the relay's admin token only", .tier(.fast))
struct RevealPersonalDataTests {
    static let relayToken = "relay-admin-token-0123456789"
    static let tenantToken = "brand-a-admin-token-0123456789"

    @Test("a tenant's token: dead letters as hashes, 403 for reveal=personal-data and for erasures; the relay's token sees the values")
    func revealNeedsTheRelaysToken() async throws {
        let directory = temporaryDirectory("reveal")
        defer { removeTree(directory) }
        // brand-a's dead letter, holding her canaries, stored before the relay starts.
        var registration = try ErasureBench.registration("pdcanaryrevealtoken", user: "pdcanaryrevealuser", tenant: "brand-a")
        registration.deviceName = "pdcanaryrevealdevice"
        let store = try await ForwardingStore(dataDirectory: directory)
        try await store.deadLetter(
            sequence: 1, event: .registration(registration), url: "https://campaign.example/brand-a", status: 400, body: "refused",
            reason: "Campaign refused it")

        let brandA = TenantConfiguration(
            destinations: TenantDestinations(tenant: try TenantName(validating: "brand-a"), trackingHost: nil, marketingHost: nil),
            adminToken: Self.tenantToken)
        let server = try await RunningServer.start { configuration in
            configuration.dataDirectory = directory
            configuration.adminToken = Self.relayToken
            configuration.tenants = [brandA]
        }
        let http = TestHTTPClient()
        let asTenant = [("Authorization", "Bearer \(Self.tenantToken)")]
        let asRelay = [("Authorization", "Bearer \(Self.relayToken)")]
        let letters = server.url + "/brand-a/v1/deadletters"

        let hidden = try await http.get(letters, headers: asTenant)
        #expect(hidden.status == 200 && hidden.body.contains("hash:"), "\(hidden.status) \(hidden.body)")
        #expect(!hidden.body.contains("pdcanary"), "hashes, not values: \(hidden.body)")
        let refused = try await http.get(letters + "?reveal=personal-data", headers: asTenant)
        #expect(refused.status == 403, "\(refused.status) \(refused.body)")
        #expect(!refused.body.contains("pdcanary"))
        let revealed = try await http.get(letters + "?reveal=personal-data", headers: asRelay)
        #expect(revealed.status == 200, "\(revealed.status) \(revealed.body)")
        #expect(["pdcanaryrevealtoken", "pdcanaryrevealuser", "pdcanaryrevealdevice"].allSatisfy(revealed.body.contains), "\(revealed.body)")

        let erasure = #"{"userKey":"pdcanaryrevealuser","dryRun":true}"#
        #expect(try await http.post(server.url + "/v1/privacy/erasures", erasure, headers: asTenant).status == 403)
        #expect(try await http.get(server.url + "/v1/privacy/erasures", headers: asTenant).status == 403)
        let dryRun = try await http.post(server.url + "/v1/privacy/erasures", erasure, headers: asRelay)
        #expect(dryRun.status == 200 && dryRun.body.contains(#""deadLetters":1"#), "\(dryRun.status) \(dryRun.body)")
        await http.shutdown()
        await server.stop()
    }
}

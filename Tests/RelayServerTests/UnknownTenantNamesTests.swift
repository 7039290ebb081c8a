import NIOHTTP1
import RelayCore
import RelayForwarding
import RelayProcessTestSupport
import RelayServer
import TestTiers
import Testing

/// A 404 for an unknown tenant names the relay's tenants (a list of its brands or customers) only
/// to a request carrying the relay's own admin token: not to anyone on the open SDK paths, not to
/// a tenant's token, and never on a relay without an admin token.
@Suite("An unknown tenant's 404 names the tenants to the relay's admin token alone", .timeLimit(.minutes(10)), .tier(.fast))
struct UnknownTenantNamesTests {
    static let relayToken = "relay-admin-token-0123456789"
    static let tenantToken = "brand-a-admin-token-0123456789"
    static let paths =
        "tenant paths are /{tenant}/r/?id=…, /{tenant}/r/test, /{tenant}/nms/mobile/1/registerIOS.jssp, /{tenant}/nms/mobile/1/registerAndroid.jssp, /{tenant}/v1/events"
    static let anonymous =
        #"no tenant "nope" on this relay: \#(paths); tenants are [tenant.NAME] tables of serve --config (the relay's admin token gets their names here; campaign-relay config check lists them)"#
    static let named =
        #"no tenant "nope" on this relay: \#(paths); tenants are [tenant.NAME] tables of serve --config (this relay has brand-a, brand-b)"#

    static func tenants() throws -> [TenantConfiguration] {
        [
            TenantConfiguration(
                destinations: TenantDestinations(tenant: try TenantName(validating: "brand-b"), trackingHost: nil, marketingHost: nil)),
            TenantConfiguration(
                destinations: TenantDestinations(tenant: try TenantName(validating: "brand-a"), trackingHost: nil, marketingHost: nil),
                adminToken: tenantToken),
        ]
    }

    /// The requests that meet an unknown tenant: an SDK hit (text), a registration (text), an
    /// ingest (JSON) and a method the path does not take (JSON), each as `Authorization` says.
    static func answers(_ http: TestHTTPClient, _ url: String, authorization: String?) async throws -> [(String, TestHTTPClient.Answer)] {
        let headers = authorization.map { [("Authorization", "Bearer \($0)")] } ?? []
        return [
            ("GET /nope/r/", try await http.send(.GET, url + "/nope/r/?id=hd828,f0190,1", headers: headers)),
            (
                "POST /nope/…/registerIOS.jssp",
                try await http.send(.POST, url + "/nope/nms/mobile/1/registerIOS.jssp", body: Array("x".utf8), headers: headers + formHeaders)
            ),
            ("POST /nope/v1/events", try await http.send(.POST, url + "/nope/v1/events", body: Array("[]".utf8), headers: headers)),
            ("PUT /nope/v1/events", try await http.send(.PUT, url + "/nope/v1/events", body: Array("[]".utf8), headers: headers)),
        ]
    }

    /// `message` as the route writes it: text on the SDK paths (the first two), JSON elsewhere.
    static func expected(_ message: String, index: Int) -> String {
        index < 2 ? message + "\n" : #"{"error":"\#(message.replacing("\"", with: "\\\""))"}"#
    }

    @Test("no token, a tenant's token: no name; the relay's admin token: every name; on SDK and JSON paths alike")
    func namesForTheAdminTokenOnly() async throws {
        let tenants = try Self.tenants()
        let server = try await RunningServer.start { configuration in
            configuration.aggregates = false
            configuration.adminToken = Self.relayToken
            configuration.tenants = tenants
        }
        let http = TestHTTPClient()
        for (who, authorization, message) in [
            ("anyone", nil, Self.anonymous), ("brand-a's token", Self.tenantToken, Self.anonymous), ("a wrong token", "nope", Self.anonymous),
            ("the relay's admin token", Self.relayToken, Self.named),
        ] {
            for (index, (request, answer)) in try await Self.answers(http, server.url, authorization: authorization).enumerated() {
                #expect(answer.status == 404, "\(who), \(request): \(answer.status)")
                #expect(answer.body == Self.expected(message, index: index), "\(who), \(request): \(answer.body)")
            }
        }
        await server.stop()

        // A relay without an admin token names its tenants to no one.
        let open = try await RunningServer.start { configuration in
            configuration.aggregates = false
            configuration.tenants = tenants
        }
        for (index, (request, answer)) in try await Self.answers(http, open.url, authorization: Self.relayToken).enumerated() {
            #expect(answer.body == Self.expected(Self.anonymous, index: index), "no admin token, \(request): \(answer.body)")
        }
        await open.stop()
        await http.shutdown()
    }
}

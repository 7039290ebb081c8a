import CampaignProtocol
import Hummingbird
import RelayCore

extension TenantDirectory {
    /// The tenant paths, as a 404 names them: what a request under a tenant's prefix may be.
    static let tenantPaths = [
        "\(CampaignEndpoint.tracking)/?id=…", CampaignEndpoint.trackingTest, CampaignEndpoint.registration(.ios),
        CampaignEndpoint.registration(.android), "v1/events",
    ].map { "/{tenant}/" + $0 }

    /// The 404 of a path whose first segment is no tenant of this relay: nothing was read or
    /// stored, and the words say how tenant paths are written; as `{"error":…}` (`json`) or, on
    /// the SDK endpoints, as a line of plain text.
    ///
    /// The tenants' names are a list of the company's brands or customers, and the SDK paths that
    /// answer this 404 are open to anyone: they are named only to a request carrying the relay's
    /// own admin token (``relayAdminToken``), the token that sees every tenant anyway. A tenant's
    /// token, no token, or a relay without an admin token gets none of them, not even whether
    /// there are any.
    func unknownTenant(_ segment: String, request: Request, json: Bool) -> Response {
        let rule = TenantName.ruleBroken(by: segment).map { " (a tenant name \($0))" } ?? ""
        let known: String
        if let relayAdminToken, AdminAuthentication(token: relayAdminToken).matches(request.headers[.authorization] ?? "") {
            let names = self.names
            known = names.isEmpty ? "this relay declares none" : "this relay has " + names.map(\.text).joined(separator: ", ")
        } else {
            known = "the relay's admin token gets their names here; campaign-relay config check lists them"
        }
        return Responses.refusal(
            .notFound,
            "no tenant \(JSONText.quoted(segment)) on this relay\(rule): tenant paths are \(Self.tenantPaths.joined(separator: ", ")); tenants are [tenant.NAME] tables of serve --config (\(known))",
            json: json)
    }
}

import CampaignProtocol
import Hummingbird
import NIOConcurrencyHelpers
import RelayCore

/// The tenants `serve` answers for, by the first segment of a request's path: `/brand-a/r/?id=…`
/// is served as `brand-a`, and a path without a tenant prefix as the default tenant.
///
/// Looked up on every request with a tenant prefix (a dictionary read under a lock); replaced whole
/// when the configuration is reloaded (``replace(with:)``), so a request sees the tenants before
/// or after a reload, never a mix.
final class TenantDirectory: Sendable {
    /// The default tenant's scope: the relay's own options.
    let defaultScope: TenantScope
    /// Each tenant's scope, by name.
    private let current: NIOLockedValueBox<[String: TenantScope]>

    /// The directory of the default tenant (`integrationKeys`) and of `tenants`.
    init(integrationKeys: Set<String>, tenants: [TenantConfiguration]) {
        defaultScope = TenantScope(name: nil, integrationKeys: integrationKeys, adminToken: nil)
        current = NIOLockedValueBox(Self.scopes(of: tenants))
    }

    private static func scopes(of tenants: [TenantConfiguration]) -> [String: TenantScope] {
        Dictionary(
            tenants.map { ($0.name.text, TenantScope(name: $0.name, integrationKeys: $0.integrationKeys, adminToken: $0.adminToken)) },
            uniquingKeysWith: { first, _ in first })
    }

    /// Each tenant's scope, by name, as of now.
    var scopes: [String: TenantScope] { current.withLockedValue { $0 } }

    /// The names of the tenants, as of now.
    var names: [TenantName] { scopes.values.compactMap(\.name).sorted() }

    /// Serves `tenants` from now on, in place of the tenants before.
    func replace(with tenants: [TenantConfiguration]) {
        let scopes = Self.scopes(of: tenants)
        current.withLockedValue { $0 = scopes }
    }

    /// The scope of the tenant named by a path segment; `nil` when no tenant has that name.
    func scope(named segment: Substring) -> TenantScope? {
        let name = String(segment)
        return current.withLockedValue { $0[name] }
    }

    /// The scope of the tenant a route's `:tenant` parameter names; `nil` when there is none, or
    /// no tenant has that name.
    func scope(of context: BasicRequestContext) -> TenantScope? {
        context.parameters.get("tenant").flatMap { scope(named: Substring($0)) }
    }

    /// The 404 of a path whose first segment is no tenant of this relay: nothing was read or
    /// stored, and the words say how tenant paths are written.
    func unknownTenant(_ segment: String) -> Response {
        let rule = TenantName.ruleBroken(by: segment).map { " (a tenant name \($0))" } ?? ""
        let names = self.names
        let known = names.isEmpty ? "this relay declares none" : "this relay has " + names.map(\.text).joined(separator: ", ")
        let paths = [
            "\(CampaignEndpoint.tracking)/?id=…", CampaignEndpoint.trackingTest, CampaignEndpoint.registration(.ios),
            CampaignEndpoint.registration(.android),
            "v1/events",
        ]
        return Responses.error(
            .notFound,
            "no tenant \(JSONText.quoted(segment)) on this relay\(rule): tenant paths are \(paths.map { "/{tenant}/" + $0 }.joined(separator: ", ")); tenants are [tenant.NAME] tables of serve --config (\(known))"
        )
    }
}

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
    /// The relay's own admin token (`--admin-token`), the only one shown the tenants' names in a
    /// 404 (``unknownTenant(_:request:json:)``); `nil`: none is set, and no 404 names them.
    let relayAdminToken: String?

    /// The directory of the default tenant (`integrationKeys`) and of `tenants`, on a relay whose
    /// admin token is `relayAdminToken`.
    init(integrationKeys: Set<String>, tenants: [TenantConfiguration], relayAdminToken: String? = nil) {
        defaultScope = TenantScope(name: nil, integrationKeys: integrationKeys, adminToken: nil)
        current = NIOLockedValueBox(Self.scopes(of: tenants))
        self.relayAdminToken = relayAdminToken
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
}

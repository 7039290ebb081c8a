import Hummingbird

/// A route group's gate: a request needs `Authorization: Bearer <token>` with a token the route
/// takes, or it gets 401 with `WWW-Authenticate: Bearer` and a message naming the option that sets
/// the token.
///
/// On a tenant's admin routes (`/{tenant}/v1/…`, with `tenants` given) the relay's admin token and
/// the tenant's own (`admin-token` of `[tenant.NAME]`) are taken; a tenant's token anywhere else
/// gets 403, saying whose it is, so that it sees its own tenant alone.
struct AdminAuthentication: RouterMiddleware {
    typealias Context = BasicRequestContext

    /// `Bearer <token>` of the relay's admin token, as the header must read; `nil`: none is set.
    let expected: [UInt8]?
    /// What the 401 says.
    let refusal: String
    /// The tenants, when their tokens are taken on their own routes and refused elsewhere with 403.
    let tenants: TenantDirectory?

    /// The gate of a route taking `token` alone.
    init(token: String, refusal: String = "admin endpoints need Authorization: Bearer <token> (--admin-token)") {
        expected = Array("Bearer \(token)".utf8)
        self.refusal = refusal
        tenants = nil
    }

    /// The gate of admin routes: the relay's `token` (`nil`: none is set) and, on a tenant's routes
    /// (the path's `:tenant`), the tenant's own token; the other tenants' tokens get 403.
    init(token: String?, tenants: TenantDirectory) {
        expected = token.map { Array("Bearer \($0)".utf8) }
        refusal = "admin endpoints need Authorization: Bearer <token> (--admin-token, or admin-token of [tenant.NAME] on /NAME/ paths)"
        self.tenants = tenants
    }

    /// Whether a route of this gate is open to anyone: no token is set for it (a relay bound to
    /// loopback without --admin-token, and the route's tenant has none either).
    func isOpen(tenantToken: String?) -> Bool { expected == nil && tenantToken == nil }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let header = request.headers[.authorization] ?? ""
        let scope = tenants?.scope(of: context)
        let tenantToken = scope?.adminToken.map { Array("Bearer \($0)".utf8) }
        if isOpen(tenantToken: scope?.adminToken) || expected.map({ Self.matches(header, $0) }) == true
            || tenantToken.map({ Self.matches(header, $0) }) == true
        {
            return try await next(request, context)
        }
        if let tenants,
            let owner = tenants.scopes.values.first(where: { $0.adminToken.map { Self.matches(header, Array("Bearer \($0)".utf8)) } == true })
        {
            let name = owner.displayName
            return Responses.error(
                .forbidden,
                "this token is tenant \(name)'s admin token: it sees /\(name)/v1/deliveries, /\(name)/v1/deadletters and /\(name)/v1/status alone")
        }
        var response = Responses.error(.unauthorized, refusal)
        response.headers[.wwwAuthenticate] = "Bearer"
        return response
    }

    /// Whether `header` is `expected`: the comparison takes the same time whatever the header
    /// holds, so it does not leak how much of the token matched.
    static func matches(_ header: String, _ expected: [UInt8]) -> Bool {
        let given = Array(header.utf8)
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for index in 0..<expected.count { difference |= expected[index] ^ (index < given.count ? given[index] : 0) }
        return difference == 0
    }

    /// Whether `header` carries the relay's token.
    func matches(_ header: String) -> Bool { expected.map { Self.matches(header, $0) } ?? false }
}

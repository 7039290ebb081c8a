import Hummingbird

/// The gate of the `/{tenant}/…` routes: a request whose first path segment is no tenant of this
/// relay gets 404 before anything of it is read (``TenantDirectory/unknownTenant(_:request:json:)``),
/// in the form its route answers errors (plain text on the SDK endpoints); a tenant's goes on,
/// and its handler finds the scope by the same name.
struct TenantMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    let directory: TenantDirectory
    /// Whether the routes behind it answer errors as JSON (`false`: plain text, the SDK endpoints).
    let json: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard directory.scope(of: context) != nil else {
            return directory.unknownTenant(context.parameters.get("tenant") ?? "", request: request, json: json)
        }
        return try await next(request, context)
    }
}

import Hummingbird

/// The admin endpoints' gate: with an admin token set, a request needs
/// `Authorization: Bearer <token>`, or it gets 401 with `WWW-Authenticate: Bearer`.
struct AdminAuthentication: RouterMiddleware {
    typealias Context = BasicRequestContext

    /// `Bearer <token>`, as the header must read.
    let expected: [UInt8]

    init(token: String) {
        expected = Array("Bearer \(token)".utf8)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard matches(request.headers[.authorization] ?? "") else {
            var response = Responses.error(.unauthorized, "admin endpoints need Authorization: Bearer <token> (--admin-token)")
            response.headers[.wwwAuthenticate] = "Bearer"
            return response
        }
        return try await next(request, context)
    }

    /// The comparison takes the same time whatever the header holds, so it does not leak how much
    /// of the token matched.
    func matches(_ header: String) -> Bool {
        let given = Array(header.utf8)
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for index in 0..<expected.count { difference |= expected[index] ^ (index < given.count ? given[index] : 0) }
        return difference == 0
    }
}

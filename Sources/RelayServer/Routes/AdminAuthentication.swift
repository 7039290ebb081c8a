import Hummingbird

/// A route group's gate: a request needs `Authorization: Bearer <token>`, or it gets 401 with
/// `WWW-Authenticate: Bearer` and a message naming the option that sets the token.
struct AdminAuthentication: RouterMiddleware {
    typealias Context = BasicRequestContext

    /// `Bearer <token>`, as the header must read.
    let expected: [UInt8]
    /// What the 401 says.
    let refusal: String

    init(token: String, refusal: String = "admin endpoints need Authorization: Bearer <token> (--admin-token)") {
        expected = Array("Bearer \(token)".utf8)
        self.refusal = refusal
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard matches(request.headers[.authorization] ?? "") else {
            var response = Responses.error(.unauthorized, refusal)
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

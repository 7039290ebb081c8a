import Hummingbird
import RelayCore

/// Adds the server's routes and remembers the methods each path answers, so that any other
/// method on a known path gets `405 Method Not Allowed` with an `Allow` header (not a 404 that
/// reads as a wrong URL).
final class RouteTable {
    typealias Handler = @Sendable (Request, BasicRequestContext) async throws -> Response

    let router: Router<BasicRequestContext>
    /// Where routes are added: the router, or a group of it with its own middleware.
    private let target: any RouterMethods<BasicRequestContext>
    private let record: MethodRecord
    /// Whether the routes of this table answer their errors in plain text (the SDK endpoints, as
    /// Campaign does) rather than as `{"error":…}`: the 404 of an unknown tenant and the 405 of
    /// another method included.
    let answersInText: Bool

    /// The paths and methods added so far, shared by a table and its groups.
    private final class MethodRecord {
        var paths: [String] = []
        var methods: [String: [HTTPRequest.Method]] = [:]
        /// The paths whose errors are plain text (``RouteTable/answersInText``).
        var textPaths: Set<String> = []
        /// The tenants of the `:tenant/` paths, whose other methods answer 404 for an unknown tenant.
        var tenants: TenantDirectory?
    }

    /// The prefix of a tenant's routes: its name is the first path segment.
    static let tenantPrefix = ":tenant/"

    init(router: Router<BasicRequestContext>) {
        self.router = router
        self.target = router
        self.record = MethodRecord()
        self.answersInText = false
    }

    private init(
        router: Router<BasicRequestContext>, target: any RouterMethods<BasicRequestContext>, record: MethodRecord, answersInText: Bool
    ) {
        self.router = router
        self.target = target
        self.record = record
        self.answersInText = answersInText
    }

    /// A table whose routes go through `middleware` first (the admin token check, for example),
    /// after the middleware of this table.
    func group(_ middleware: any MiddlewareProtocol<Request, Response, BasicRequestContext>) -> RouteTable {
        RouteTable(router: router, target: target.group().add(middleware: middleware), record: record, answersInText: answersInText)
    }

    /// This table, its routes answering errors in plain text: the SDK endpoints', which the SDKs
    /// (and Campaign's own hosts) speak, never JSON.
    func answeringInText() -> RouteTable {
        RouteTable(router: router, target: target, record: record, answersInText: true)
    }

    /// Adds a group's routes twice through `add`: as they are, served as the default tenant, and
    /// under `/{tenant}/`, behind ``TenantMiddleware`` (404 for a tenant this relay does not have),
    /// served as the tenant the path names. `add` gets the table, the prefix of its paths and how
    /// a handler finds its request's scope.
    func addForEachTenant(
        _ directory: TenantDirectory, _ add: (RouteTable, String, @escaping @Sendable (BasicRequestContext) -> TenantScope) -> Void
    ) {
        add(self, "", { _ in directory.defaultScope })
        record.tenants = directory
        // The middleware let only a known tenant through: the lookup finds it.
        add(
            group(TenantMiddleware(directory: directory, json: !answersInText)), Self.tenantPrefix,
            { directory.scope(of: $0) ?? directory.defaultScope })
    }

    /// `GET path`.
    func get(_ path: String, _ handler: @escaping Handler) {
        recordRoute(path, .get)
        target.get(RouterPath(path), use: handler)
    }

    /// `POST path`.
    func post(_ path: String, _ handler: @escaping Handler) {
        recordRoute(path, .post)
        target.post(RouterPath(path), use: handler)
    }

    /// Answers 405 to the methods no route of a path takes. Call once, after every route.
    func refuseOtherMethods() {
        let candidates: [HTTPRequest.Method] = [.get, .head, .post, .put, .delete, .patch, .options]
        for path in record.paths {
            let allowed = record.methods[path] ?? []
            let allowHeader = allowed.map(\.rawValue).joined(separator: ", ")
            let shown = "/" + path.replacing(":id", with: "{id}").replacing(":tenant", with: "{tenant}")
            let tenants = path.hasPrefix(Self.tenantPrefix) ? record.tenants : nil
            let json = !record.textPaths.contains(path)
            for method in candidates where !allowed.contains(method) {
                router.on(RouterPath(path), method: method) { request, context in
                    // A path of no tenant is not there at all, whatever the method.
                    if let tenants, tenants.scope(of: context) == nil {
                        return tenants.unknownTenant(context.parameters.get("tenant") ?? "", request: request, json: json)
                    }
                    var response = Responses.refusal(
                        .methodNotAllowed, "\(request.method.rawValue) is not allowed on \(shown); allowed: \(allowHeader)", json: json)
                    response.headers[.allow] = allowHeader
                    return response
                }
            }
        }
    }

    private func recordRoute(_ path: String, _ method: HTTPRequest.Method) {
        if record.methods[path] == nil { record.paths.append(path) }
        record.methods[path, default: []].append(method)
        if answersInText { record.textPaths.insert(path) }
    }
}

extension Request {
    /// The media type of the body (`Content-Type` without parameters, lower-cased); `nil` when absent.
    var mediaType: String? {
        guard let value = headers[.contentType] else { return nil }
        return value.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: " ").lowercased() }
    }

    /// The query parameter `name` as a non-negative integer; `nil` when absent, a 400 naming the
    /// parameter when it is something else.
    func nonNegativeIntegerParameter(_ name: String) -> Result<Int?, QueryParameterError> {
        guard let text = uri.queryParameters.get(name) else { return .success(nil) }
        guard let value = Int(text), value >= 0 else { return .failure(QueryParameterError(name: name, value: String(text))) }
        return .success(value)
    }
}

/// A query parameter with a value the endpoint cannot take.
struct QueryParameterError: Error {
    var name: String
    var value: String

    var response: Response {
        Responses.error(.badRequest, "query parameter \(name)=\(value) is not a non-negative integer")
    }
}

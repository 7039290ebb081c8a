import Hummingbird
import RelayCore
import RelayEventJSON

/// `GET /` (``RelayIndex``: HTML for a browser, JSON otherwise) and `GET /openapi.yaml` (the
/// OpenAPI document compiled into the binary, ``OpenAPIDocument``). Open to all: neither holds a
/// figure.
struct IndexRoutes: RouteGroup, Sendable {
    /// The media type of the OpenAPI document (RFC 9512).
    static let yamlContentType = "application/yaml"

    func add(to routes: RouteTable) {
        let index = RelayIndex()
        let json = APIJSON.text(index)
        let html = index.html
        routes.get("") { request, _ in
            guard Self.acceptsHTML(request.headers[.accept]) else { return Responses.json(.ok, json) }
            return Response(
                status: .ok,
                headers: [
                    .contentType: "text/html; charset=utf-8",
                    // Links and text alone: nothing to load, run or frame.
                    .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'none'",
                ],
                body: .init(byteBuffer: .init(string: html)))
        }
        routes.get("openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: Self.yamlContentType], body: .init(byteBuffer: .init(string: OpenAPIDocument.yaml)))
        }
    }

    /// Whether an `Accept` header names `text/html` (with a quality above 0), as browsers' do; a
    /// client that names nothing, or only `*/*` (curl, most libraries), gets JSON.
    static func acceptsHTML(_ accept: String?) -> Bool {
        guard let accept else { return false }
        return accept.split(separator: ",").contains { range in
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: " ").lowercased() }
            guard parts.first == "text/html" else { return false }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0
        }
    }
}

import Hummingbird

/// Reads a request's body before its route does, and answers 413 (as JSON or text, as the route
/// answers) when it is larger than `maximumBytes`. The route then reads the collected body
/// (``Hummingbird/Request/collectedBody()``) and never meets a body over its limit.
struct BodyLimitMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let maximumBytes: Int
    /// Whether the route answers JSON (`/v1/…`) or text (the SDK endpoints).
    let json: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // A body that cannot be read (the client went away) is answered as one too large: the
        // client reads no answer either way.
        guard let buffer = try? await request.body.collect(upTo: maximumBytes) else { return Responses.tooLarge(maximumBytes, json: json) }
        var request = request
        request.body = RequestBody(buffer: buffer)
        return try await next(request, context)
    }
}

extension RouteTable {
    /// The table of an ingest route: its answers go through ``IngestAnswerMiddleware``, and, with
    /// `maximumBodyBytes`, its body through ``BodyLimitMiddleware`` first.
    func ingest(_ ingestor: EventIngestor, maximumBodyBytes: Int? = nil, json: Bool) -> RouteTable {
        let answered = group(IngestAnswerMiddleware(ingestor: ingestor))
        guard let maximumBodyBytes else { return answered }
        return answered.group(BodyLimitMiddleware(maximumBytes: maximumBodyBytes, json: json))
    }
}

import Hummingbird

/// The answer rules every ingest route shares (SDK registrations and hits, `/v1/events`, relay
/// batches), applied to the route's answer instead of by each handler:
/// - a refusal as invalid (400, 413, 415, 422) counts in `relay_requests_rejected_total`;
/// - a 503 counts in `relay_requests_unavailable_total`, and while the relay shuts down it closes
///   the connection, so keep-alive clients go elsewhere instead of holding it open.
struct IngestAnswerMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let ingestor: EventIngestor

    /// The statuses that mean "invalid; nothing of it was stored; do not send it again as is".
    static let rejectionStatuses: Set<Int> = [400, 413, 415, 422]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        let status = Int(response.status.code)
        if Self.rejectionStatuses.contains(status) {
            ingestor.metrics.requestsRejected.increment()
        } else if status == 503 {
            ingestor.metrics.requestsUnavailable.increment()
            if ingestor.isShuttingDown { response.headers[.connection] = "close" }
        }
        return response
    }
}

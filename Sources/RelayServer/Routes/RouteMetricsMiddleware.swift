import Hummingbird

/// Counts every request by route (the matched path pattern, so the label set stays bounded),
/// method and status, and records its duration: `relay_http_requests_total`,
/// `relay_http_request_duration_seconds`.
struct RouteMetricsMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let metrics: RelayMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        do {
            let response = try await next(request, context)
            record(request, context, status: Int(response.status.code), started: started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            record(request, context, status: Int(status), started: started)
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, status: Int, started: ContinuousClock.Instant) {
        // Hummingbird names no route, or "NotFound", when nothing matched: one label for all of those.
        let route =
            context.endpointPath.flatMap { $0 == "NotFound" || $0 == "/NotFound" ? nil : ($0.hasPrefix("/") ? $0 : "/" + $0) } ?? "(unmatched)"
        metrics.recordRequest(route: route, method: request.method.rawValue, status: status, duration: ContinuousClock.now - started)
    }
}

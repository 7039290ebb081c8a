import Hummingbird

/// `GET /healthz` (the process answers) and `GET /readyz` (it accepts events).
struct HealthRoutes: Sendable {
    let ingestor: EventIngestor

    func add(to routes: RouteTable) {
        routes.get("healthz") { _, _ in Responses.text(.ok, "ok\n") }
        routes.get("readyz") { _, _ in
            let durable = await ingestor.log.durableSequence
            if ingestor.isShuttingDown {
                return Responses.json(.serviceUnavailable, "{\"ready\":false,\"reason\":\"shutting down\",\"durableSequence\":\(durable)}")
            }
            return Responses.json(.ok, "{\"ready\":true,\"durableSequence\":\(durable)}")
        }
    }
}

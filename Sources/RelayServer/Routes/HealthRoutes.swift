import Hummingbird
import RelayEventJSON
import RelayForwarding

/// `GET /healthz` (the process answers) and `GET /readyz` (it accepts events).
struct HealthRoutes: RouteGroup, Sendable {
    let ingestor: EventIngestor
    /// The relay lane of `serve --upstream-relay`, whose state `/readyz` reports.
    let upstream: UploadLane?
    /// The fleet aggregator of `serve --postgres-url`, whose lag `/readyz` reports.
    let fleet: FleetStatus?

    func add(to routes: RouteTable) {
        let identity = ingestor.log.identity
        let health = APIJSON.text(Health(status: "ok", relayId: identity.relayID, epoch: identity.epoch.number))
        routes.get("healthz") { _, _ in Responses.json(.ok, health) }
        routes.get("readyz") { _, _ in
            // The newest durable event's sequence number (0: nothing stored yet).
            let last = await ingestor.log.durableSequence - 1
            let upstreamState = await upstream?.state()
            let postgres = fleet.map { PostgresReadiness($0.current, durable: last + 1) }
            if ingestor.isShuttingDown {
                return Responses.json(
                    .serviceUnavailable,
                    APIJSON.text(
                        Readiness(
                            ready: false, reason: "shutting down", lastDurableSequence: last, upstream: upstreamState.map(UpstreamReadiness.init),
                            postgres: postgres)))
            }
            // An unreachable central relay does not make this relay unready: it keeps taking events.
            return Responses.json(
                .ok,
                APIJSON.text(
                    Readiness(
                        ready: true, reason: nil, lastDurableSequence: last, upstream: upstreamState.map(UpstreamReadiness.init), postgres: postgres))
            )
        }
    }
}

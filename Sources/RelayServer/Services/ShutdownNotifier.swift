import Logging
import RelayCore
import ServiceLifecycle

/// The first to hear of a shutdown: from then on, new events are answered 503 + Retry-After.
/// It returns (letting the listener close) only after `delay`, so that a load balancer that
/// polls `/readyz` stops sending here before connections are refused. systemd hears `STOPPING=1`
/// at the same moment.
struct ShutdownNotifier: Service {
    let ingestor: EventIngestor
    let delay: Duration
    let systemd: SystemdNotifier
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        ingestor.beginShutdown()
        systemd.notify("STOPPING=1\nSTATUS=shutting down: refusing new events, saving positions", telling: "the relay is stopping", logger: logger)
        logger.notice(
            "shutting down: refusing new events, finishing requests under way, then saving positions and closing the log",
            metadata: delay > .zero ? ["listener-closes-in": "\(delay.humanText)"] : [:]
        )
        if delay > .zero {
            // The group waits for this service before it stops the listener: sleeping here is the delay.
            try? await Task.sleep(for: delay)
            logger.notice("shutdown delay over: closing the listener")
        }
    }
}

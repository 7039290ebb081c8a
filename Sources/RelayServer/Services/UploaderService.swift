import Logging
import RelayForwarding
import RelayLog
import ServiceLifecycle

/// Runs the uploader's lanes (Campaign hosts, central relay) continuously; on shutdown they stop
/// sending and save their positions.
struct UploaderService: Service {
    let uploader: Uploader
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await uploader.run(until: nil) }
        } catch is CancellationError {
        } catch {
            logger.error("the uploader stopped; forwarding resumes after a restart", metadata: ["error": "\(error)"])
        }
        var positions: Logger.Metadata = [:]
        for (name, lane) in await uploader.statisticsByLane() { positions["\(name)-position"] = "\(lane.position)" }
        logger.notice("uploader stopped; positions saved", metadata: positions)
    }
}

import Logging
import RelayForwarding
import RelayLog
import ServiceLifecycle

/// Runs the uploader continuously; on shutdown it stops sending and saves its positions.
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
        for (kind, lane) in await uploader.statistics() { positions["\(kind)-position"] = "\(lane.position)" }
        logger.notice("uploader stopped; positions saved", metadata: positions)
    }
}

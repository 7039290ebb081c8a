import Logging
import RelayIO
import RelayLog
import RelayPostgres
import RelayPrivacy
import ServiceLifecycle

/// Runs this relay's lease rounds (``RelayPostgres/StreamLeases``) while `serve` runs on the log
/// in PostgreSQL; on stopping it hands back adopted streams and releases its own lease, so that
/// another relay adopts its stream at once rather than after the lease.
///
/// When this relay takes its own stream back from a relay that had adopted it, the erasures that
/// relay left unfinished (their plans beside the stream) are masked in this relay's log before
/// any lane sends, then finished.
struct StreamLeasesService: Service {
    let leases: StreamLeases
    let adoptions: AdoptedStreams
    /// The plans of this relay's stream's unfinished erasures.
    let plans: PostgresErasurePlans
    /// This relay's log, whose readers mask them.
    let log: WriteAheadLog
    /// This relay's erasure, which finishes them.
    let erasure: PersonalDataErasure
    let logger: Logger

    func run() async throws {
        let (plans, log, erasure, logger) = (plans, log, erasure, logger)
        await leases.setAdoption(
            StreamLeases.Adoption(
                adopt: { [adoptions] in await adoptions.adopt($0) }, handBack: { [adoptions] in await adoptions.handBack($0) },
                reclaiming: {
                    do {
                        log.erasureMask.insert(
                            plans: try await BlockingExecutor(name: "erasure-plans").run { () throws(LogError) in
                                try plans.pending(skippingUnreadable: true)
                            })
                        return true
                    } catch {
                        logger.warning("could not read this stream's unfinished erasures", metadata: ["error": "\(error)"])
                        return false
                    }
                },
                reclaimed: {
                    do {
                        let finished = try await erasure.finishPending()
                        if !finished.isEmpty {
                            logger.notice(
                                "finished the erasures left by the relay that had adopted this stream", metadata: ["erasures": "\(finished.count)"])
                        }
                    } catch {
                        logger.error(
                            "an unfinished erasure cannot be finished now; its registrations stay masked, and the next erase finishes it",
                            metadata: ["error": "\(error)"])
                    }
                }))
        await cancelWhenGracefulShutdown { await leases.run() }
    }
}

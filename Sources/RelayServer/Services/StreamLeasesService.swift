import Logging
import RelayPostgres
import ServiceLifecycle

/// Runs this relay's lease rounds (``RelayPostgres/StreamLeases``) while `serve` runs on the log
/// in PostgreSQL; on stopping it hands back adopted streams and releases its own lease, so that
/// another relay adopts its stream at once rather than after the lease.
struct StreamLeasesService: Service {
    let leases: StreamLeases
    let adoptions: AdoptedStreams

    func run() async throws {
        await leases.setAdoption(
            StreamLeases.Adoption(adopt: { [adoptions] in await adoptions.adopt($0) }, handBack: { [adoptions] in await adoptions.handBack($0) }))
        await cancelWhenGracefulShutdown { await leases.run() }
    }
}

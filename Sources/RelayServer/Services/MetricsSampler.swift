import RelayAggregator
import RelayCore
import RelayForwarding
import RelayLog
import RelayPostgres
import ServiceLifecycle

/// Samples, once a second, what no code path of the server sees change: the log's durable end, the
/// aggregator's and PostgreSQL's lag behind it, the dead letters waiting, and the process.
///
/// The forwarding lanes are not sampled: each records its own metrics as things happen
/// (``RelayForwarding/LaneMetrics``, ``RelayMetrics/laneMetrics(for:)``). The status page's rates
/// are sampled here too, with each lane's deliveries read from the lanes' counters.
struct MetricsSampler: Service {
    let metrics: RelayMetrics
    /// The status page's rates, sampled with the metrics.
    let history: StatusHistory
    let log: WriteAheadLog
    let fleet: FleetStatus?
    let aggregator: Aggregator?
    let store: ForwardingStore
    /// The tenants served (their dead letters show, 0 when they have none).
    let tenants: TenantDirectory
    let durability: LogDurability

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let durable = await log.durableSequence
                metrics.lastDurableSequence.set(Int64(durable) - 1)
                metrics.logCopies.set(Int64(durability.current.copies))
                if let aggregator { metrics.aggregatorLag.set(Int64(durable) - Int64(aggregator.committedNextSequence)) }
                if let fleet { metrics.postgresLag.set(Int64(durable) - Int64(fleet.current.nextSequence ?? 1)) }
                history.record(durable: durable, delivered: metrics.deliveredByLane())
                if let counts = try? await store.pendingDeadLetterCountsByTenant() {
                    // Every tenant served shows, 0 when it has none; a tenant no longer served
                    // shows while it has letters.
                    let served = [TenantName.defaultTenantText] + tenants.names.map(\.text)
                    for label in Set(served + counts.keys.map { TenantName.displayName(stored: $0) }) {
                        metrics.deadLetters(tenantLabel: label).set(Int64(counts[label == TenantName.defaultTenantText ? "" : label] ?? 0))
                    }
                }
                for (tenant, share) in await log.tenantShares() {
                    metrics.recordTenantShare(tenant, owedBytes: share.owedBytes, limitBytes: share.limitBytes)
                }
                await metrics.process.sample()
                try await Task.sleep(for: .seconds(1))
            }
        }
    }
}

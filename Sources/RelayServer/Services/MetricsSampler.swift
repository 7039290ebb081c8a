import RelayAggregator
import RelayForwarding
import RelayLog
import ServiceLifecycle

/// Copies the uploader's, aggregator's and process's state into the metrics once a second.
struct MetricsSampler: Service {
    let metrics: RelayMetrics
    /// The status page's rates, sampled with the metrics.
    let history: StatusHistory
    let log: WriteAheadLog
    let uploader: Uploader?
    let relayLane: RelayUpstreamLane?
    let fleet: FleetStatus?
    let aggregator: Aggregator?
    let store: ForwardingStore

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let durable = await log.durableSequence
                metrics.lastDurableSequence.set(Int64(durable) - 1)
                if let aggregator { metrics.aggregatorLag.set(Int64(durable) - Int64(await aggregator.nextSequence)) }
                if let fleet { metrics.postgresLag.set(Int64(durable) - Int64(fleet.current.nextSequence ?? 1)) }
                var delivered: [String: Int] = [:]
                if let uploader {
                    let lanes = await uploader.statistics()
                    metrics.record(lanes: lanes)
                    for (kind, lane) in lanes { delivered[kind.rawValue] = lane.delivered }
                }
                history.record(durable: durable, delivered: delivered)
                if let relayLane { metrics.record(upstream: await relayLane.state()) }
                metrics.deadLetters.set(Int64((try? await store.pendingDeadLetterCount()) ?? 0))
                await metrics.process.sample()
                try await Task.sleep(for: .seconds(1))
            }
        }
    }
}

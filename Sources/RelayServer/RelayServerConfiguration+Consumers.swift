import RelayAggregator
import RelayCore
import RelayForwarding
public import RelayLog
import RelayPostgres

extension RelayServerConfiguration {
    /// The log's consumers under this configuration, in one list: `serve` declares them all when
    /// it opens the log, so retention knows each of them before any of them moves.
    public var logConsumers: [LogConsumerDeclaration] {
        var consumers: [LogConsumerDeclaration] = []
        if aggregates { consumers.append(Aggregator.consumer) }
        if postgres != nil { consumers.append(FleetAggregator.consumer) }
        if trackingHost != nil { consumers.append(UploadLane.Kind.tracking.consumer) }
        if marketingHost != nil { consumers.append(UploadLane.Kind.marketing.consumer) }
        // A relay handing every event on to a central relay forwards no tenant to Campaign itself.
        if upstreamRelay == nil { consumers += tenants.flatMap(\.destinations.consumers) }
        if upstreamRelay != nil { consumers.append(CentralRelaySink.consumer) }
        return consumers
    }

    /// ``log`` with the latest written events kept for the consumers that follow its end: two of
    /// the aggregator's batches (it reads one while it counts the other, and waits
    /// ``RelayAggregator/Aggregator/followPause`` between rounds), unless set otherwise. Nothing is
    /// kept without consumers.
    var logWithWrittenEventsKept: LogConfiguration {
        var configuration = log
        if configuration.writtenEventsKept == 0, !logConsumers.isEmpty {
            configuration.writtenEventsKept = 2 * aggregatorBatchSize
        }
        configuration.tenantLogShares = tenantLogShares
        return configuration
    }

    /// Each tenant's share of the log, released as its destinations pass its events: its own lanes
    /// to its hosts, or on a relay handing every event on, the lane to the central relay.
    var tenantLogShares: [TenantName: TenantLogShare] {
        var quotas: [TenantName: TenantLogShare] = [:]
        for tenant in tenants {
            guard let limit = tenant.maximumLogBytes else { continue }
            let consumers = upstreamRelay != nil ? [CentralRelaySink.consumer.name] : tenant.destinations.consumers.map(\.name)
            quotas[tenant.name] = TenantLogShare(limitBytes: limit, consumers: consumers)
        }
        return quotas
    }
}

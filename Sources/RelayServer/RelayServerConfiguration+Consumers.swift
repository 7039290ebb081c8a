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
        // Each sink's lane: the default tenant's list (Campaign hosts, a central relay), then each tenant's.
        consumers += sinkLists.consumers
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

    /// Each tenant's share of the log, released as its destinations pass its events: the lanes of
    /// the sinks that take every tenant's events (a central relay, on a relay handing every event
    /// on), and its own lanes to its hosts.
    var tenantLogShares: [TenantName: TenantLogShare] {
        var shares: [TenantName: TenantLogShare] = [:]
        let lists = sinkLists
        let everyTenant = lists.allSinks.filter { $0.kind.scope == .everyTenant }.map(\.consumer.name)
        for tenant in tenants {
            guard let limit = tenant.logShareBytes else { continue }
            let own = lists.first { $0.tenant == tenant.name }?.consumers.map(\.name) ?? []
            shares[tenant.name] = TenantLogShare(limitBytes: limit, consumers: everyTenant + own)
        }
        return shares
    }
}

import RelayCore
import RelayForwarding

extension StatusReport.Destination {
    /// The destinations of `lanes` (the uploader's, one per sink of its lists) that `tenant` shows,
    /// as of `now`, with each lane's recent deliveries per second (`delivered`, by lane name).
    ///
    /// The lanes of one tenant's (or the default tenant's) sinks come first, by tenant (the default
    /// tenant's first) then label; the lanes of sinks that take every tenant's events follow, for
    /// ``TenantSelection/all`` only. A lane whose sink delivers shows its breaker and deliveries; one
    /// whose sink hands events on shows whether it is reachable, and since when it is not.
    static func list(of lanes: [UploadLane], tenant: TenantSelection, now: EventTime, delivered: [String: Double]) async -> [Self] {
        let perTenant = lanes.filter { $0.kind.scope == .perTenant && (tenant == .all || tenant == .only($0.tenant)) }
            .sorted { ($0.tenant.storedName, $0.kind.label) < ($1.tenant.storedName, $1.kind.label) }
        let everyTenant = tenant == .all ? lanes.filter { $0.kind.scope == .everyTenant } : []
        var destinations: [Self] = []
        for lane in perTenant + everyTenant {
            destinations.append(await destination(of: lane, now: now, delivered: delivered))
        }
        return destinations
    }

    /// The destination of `lane`, as its kind's role shows it.
    private static func destination(of lane: UploadLane, now: EventTime, delivered: [String: Double]) async -> Self {
        let tenant = lane.kind.tenantLabel(lane.tenant)
        switch lane.kind.role {
        case .delivers:
            let stats = await lane.stats
            let hosts = await lane.hostStates()
            return Self(
                name: lane.kind.label, tenant: tenant, url: lane.endpoint, backlog: stats.backlog,
                oldestUnsentEvent: stats.oldestUnsentEvent?.rfc3339,
                oldestUnsentSeconds: stats.oldestUnsentEvent.map { RelayMetrics.age(of: $0, now: now.nanosecondsSinceEpoch) },
                breaker: stats.breaker, lastError: stats.lastError, lastErrorAt: stats.lastErrorAt?.rfc3339,
                deliveredPerSecond: delivered[lane.name], delivered: stats.delivered,
                concurrency: hosts.first.map { StatusReport.Concurrency($0.concurrency) }, hosts: hosts.map(StatusReport.Host.init))
        case .handsOn:
            let state = await lane.state()
            return Self(
                name: lane.kind.label, tenant: tenant, url: lane.endpoint, backlog: state.backlog,
                oldestUnsentEvent: state.oldestWaitingEvent?.rfc3339,
                oldestUnsentSeconds: state.oldestWaitingEvent.map { RelayMetrics.age(of: $0, now: now.nanosecondsSinceEpoch) },
                breaker: state.unreachableSince == nil ? "reachable" : "unreachable", lastError: state.lastFailure,
                lastErrorAt: state.unreachableSince?.rfc3339, deliveredPerSecond: nil, delivered: nil, concurrency: nil, hosts: nil)
        }
    }
}

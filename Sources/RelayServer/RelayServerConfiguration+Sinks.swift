public import RelayForwarding

extension RelayServerConfiguration {
    /// The sinks this configuration forwards to, per tenant: the one list that the uploader makes
    /// its lanes from and that the log's consumers, the metric labels, the erasure's check of what
    /// was sent on and the status page's destinations come from.
    ///
    /// The default tenant's list comes first: its Campaign hosts, a central relay, then
    /// ``additionalSinks``. Each tenant's list follows (``sinkLists(of:)``). A new kind of sink is
    /// the line here that puts it in the default tenant's list (and, for a per-tenant kind, the
    /// line in ``RelayForwarding/TenantDestinations/sinkList`` that puts it in a tenant's).
    public var sinkLists: [SinkList] {
        var sinks: [any Sink] = []
        if let trackingHost { sinks.append(TrackingHostSink(host: trackingHost, spares: trackingSpareHosts)) }
        if let marketingHost { sinks.append(MarketingHostSink(host: marketingHost, spares: marketingSpareHosts)) }
        if let upstreamRelay { sinks.append(CentralRelaySink(host: upstreamRelay, token: upstreamToken ?? "")) }
        sinks += additionalSinks
        return [SinkList(tenant: nil, sinks: sinks)] + sinkLists(of: tenants)
    }

    /// The lists of `tenants` (the configured ones, or those a reload read): none on a relay that
    /// hands every event on to a central relay, which forwards no tenant to Campaign itself.
    public func sinkLists(of tenants: [TenantConfiguration]) -> [SinkList] {
        upstreamRelay == nil ? tenants.map(\.destinations.sinkList) : []
    }

    /// The kinds of sink whose series ``RelayMetrics`` shows from the start, at 0 until a lane
    /// records: the relay's own (``RelayForwarding/SinkKind/builtIn``), then any other the lists
    /// hold.
    public var sinkKinds: [SinkKind] {
        var seen: Set<SinkKind> = []
        return (SinkKind.builtIn + sinkLists.kinds).filter { seen.insert($0).inserted }
    }
}

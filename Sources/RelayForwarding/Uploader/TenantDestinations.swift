public import CampaignProtocol
public import RelayCore
public import RelayLog

/// One tenant's Campaign hosts, as ``Uploader`` forwards to them: lanes of their own (cursors
/// `upload-tracking_<tenant>` and `upload-marketing_<tenant>`), each with its own breaker, backoff,
/// connections and dead letters, so one tenant's host being down, slow or refusing everything
/// never holds another tenant's events back.
public struct TenantDestinations: Sendable, Hashable {
    /// The tenant.
    public var tenant: TenantName
    /// Where its tracking hits go; `nil`: not forwarded.
    public var trackingHost: CampaignHost?
    /// Where its registrations go; `nil`: not forwarded.
    public var marketingHost: CampaignHost?
    /// Its tracking host's spares (`[tenant.NAME] tracking-host` as a list: every host after the first).
    public var trackingSpareHosts: [CampaignHost] = []
    /// Its marketing host's spares.
    public var marketingSpareHosts: [CampaignHost] = []
    /// A PEM file of the certificate authorities its hosts' certificates are checked against;
    /// `nil`: the relay's own (`--ca-file`, or the system's).
    public var trustedCertificateAuthorities: String?
    /// Requests started per second to each of its hosts, at most; `nil`: the relay's own `max-rate`.
    public var maximumRate: Int?

    /// The destinations of `tenant`.
    public init(
        tenant: TenantName, trackingHost: CampaignHost?, marketingHost: CampaignHost?, trustedCertificateAuthorities: String? = nil,
        maximumRate: Int? = nil
    ) {
        self.tenant = tenant
        self.trackingHost = trackingHost
        self.marketingHost = marketingHost
        self.trustedCertificateAuthorities = trustedCertificateAuthorities
        self.maximumRate = maximumRate
    }

    /// Its sinks, as the uploader takes them: the tracking host's, then the marketing host's, for
    /// each host it has.
    public var sinkList: SinkList {
        var sinks: [any Sink] = []
        if let trackingHost { sinks.append(TrackingHostSink(host: trackingHost, spares: trackingSpareHosts, tenant: tenant)) }
        if let marketingHost { sinks.append(MarketingHostSink(host: marketingHost, spares: marketingSpareHosts, tenant: tenant)) }
        return SinkList(tenant: tenant, sinks: sinks, trustedCertificateAuthorities: trustedCertificateAuthorities, maximumRate: maximumRate)
    }

    /// The log consumers of its lanes, one per host it has.
    public var consumers: [LogConsumerDeclaration] { sinkList.consumers }
}

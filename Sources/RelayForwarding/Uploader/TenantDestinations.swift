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
    /// A PEM file of the certificate authorities its hosts' certificates are checked against;
    /// `nil`: the relay's own (`--ca-file`, or the system's).
    public var trustedCertificateAuthorities: String?

    /// The destinations of `tenant`.
    public init(tenant: TenantName, trackingHost: CampaignHost?, marketingHost: CampaignHost?, trustedCertificateAuthorities: String? = nil) {
        self.tenant = tenant
        self.trackingHost = trackingHost
        self.marketingHost = marketingHost
        self.trustedCertificateAuthorities = trustedCertificateAuthorities
    }

    /// The log consumers of its lanes, one per host it has.
    public var consumers: [LogConsumerDeclaration] {
        (trackingHost.map { TrackingHostSink(host: $0, tenant: tenant).consumer }.map { [$0] } ?? [])
            + (marketingHost.map { MarketingHostSink(host: $0, tenant: tenant).consumer }.map { [$0] } ?? [])
    }
}

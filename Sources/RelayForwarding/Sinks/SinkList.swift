public import RelayCore
public import RelayLog

/// The sinks of one tenant, as configuration builds them: the one list the uploader makes its
/// lanes from, and that the log's consumers, the metrics, the erasure, the summaries and the
/// status page read.
///
/// The list of the default tenant (``tenant`` `nil`) also holds the sinks that take every
/// tenant's events (a central relay); its lanes run as long as the uploader. A tenant's list is
/// replaced as a whole when the configuration is reloaded (``Uploader/apply(_:)``).
public struct SinkList: Sendable {
    /// The tenant; `nil` for the default tenant's list.
    public var tenant: TenantName?
    /// Its sinks, in the order their lanes are listed.
    public var sinks: [any Sink]
    /// A PEM file of the certificate authorities its endpoints' certificates are checked against;
    /// `nil`: the relay's own (`--ca-file`, or the system's).
    public var trustedCertificateAuthorities: String?
    /// Requests started per second to each of its hosts, at most (`[tenant.NAME] max-rate`);
    /// `nil`: the relay's own `max-rate`.
    public var maximumRate: Int?

    /// The sinks of `tenant` (`nil`: the default tenant's and every tenant's).
    public init(tenant: TenantName?, sinks: [any Sink], trustedCertificateAuthorities: String? = nil, maximumRate: Int? = nil) {
        self.tenant = tenant
        self.sinks = sinks
        self.trustedCertificateAuthorities = trustedCertificateAuthorities
        self.maximumRate = maximumRate
    }

    /// The log consumers of its lanes, one per sink.
    public var consumers: [LogConsumerDeclaration] { sinks.map(\.consumer) }

    /// Whether `other` has the same sinks, in the same order, the same CA file and rate ceiling: a
    /// reload that leaves a tenant's list the same leaves its lanes running.
    public func isSame(as other: SinkList) -> Bool {
        tenant == other.tenant && trustedCertificateAuthorities == other.trustedCertificateAuthorities && maximumRate == other.maximumRate
            && sinks.count == other.sinks.count
            && zip(sinks, other.sinks).allSatisfy { $0.isSame(as: $1) }
    }
}

extension Sequence where Element == SinkList {
    /// Every sink of every list, the default tenant's first.
    public var allSinks: [any Sink] { flatMap(\.sinks) }
    /// The log consumers of every lane.
    public var consumers: [LogConsumerDeclaration] { flatMap(\.consumers) }
    /// The kinds of every sink, each once, in the order they first appear.
    public var kinds: [SinkKind] {
        var seen: Set<SinkKind> = []
        return allSinks.map(\.kind).filter { seen.insert($0).inserted }
    }
}

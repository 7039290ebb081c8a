public import RelayCore
public import RelayForwarding

/// One tenant `serve` serves besides the default one (a `[tenant.NAME]` table of `--config`): its
/// own Campaign hosts, integration keys, admin token and log share.
public struct TenantConfiguration: Sendable, Hashable {
    /// Its hosts and CA file: lanes, breaker, backoff and dead letters of its own.
    public var destinations: TenantDestinations
    /// The integration keys its events may carry; empty: any.
    public var integrationKeys: Set<String>
    /// A bearer token that sees this tenant alone on the admin endpoints; `nil`: only the relay's
    /// own admin token sees it.
    public var adminToken: String?
    /// Its log share (`max-wal-bytes` of its `[tenant.NAME]` table): the most bytes of its events
    /// its destinations may owe before its appends get 503 (``RelayLog/TenantLogShare``); `nil`:
    /// only the relay's `--max-wal-bytes`.
    public var logShareBytes: Int64?

    /// The tenant's name.
    public var name: TenantName { destinations.tenant }

    /// A tenant forwarding to `destinations`, taking `integrationKeys` (empty: any).
    public init(destinations: TenantDestinations, integrationKeys: Set<String> = [], adminToken: String? = nil, logShareBytes: Int64? = nil) {
        self.destinations = destinations
        self.integrationKeys = integrationKeys
        self.adminToken = adminToken
        self.logShareBytes = logShareBytes
    }
}

public import CampaignProtocol
public import RelayAggregates
public import RelayForwarding
public import RelayLog
public import RelayPostgres
public import RelayTLS

/// Everything `campaign-relay serve` is configured with.
public struct RelayServerConfiguration: Sendable {
    /// The address to listen on.
    public var host: String = "127.0.0.1"
    /// The port to listen on (0: any free port).
    public var port: Int = 8080
    /// The data directory.
    public var dataDirectory: String = "./relay-data"
    /// The log's settings.
    public var log = LogConfiguration()
    /// Where to forward tracking hits; `nil`: not forwarded.
    public var trackingHost: CampaignHost?
    /// Where to forward registrations; `nil`: not forwarded.
    public var marketingHost: CampaignHost?
    /// The tracking host's spares: they share the load, and carry it while a host fails.
    public var trackingSpareHosts: [CampaignHost] = []
    /// The marketing host's spares.
    public var marketingSpareHosts: [CampaignHost] = []
    /// How to forward.
    public var upload = UploadConfiguration()
    /// Integration keys accepted; empty: any.
    public var integrationKeys: Set<String> = []
    /// The tenants served besides the default one, each with its own hosts, keys and counts.
    public var tenants: [TenantConfiguration] = []
    /// Reads the tenants again (from `--config`), for a reload on SIGHUP; `nil`: nothing to reload.
    /// It throws, with the file, line and key, when the file breaks a rule.
    public var reloadTenants: (@Sendable () async throws -> [TenantConfiguration])?
    /// The bearer token the admin endpoints require; `nil`: none (loopback only).
    public var adminToken: String?
    /// A central relay to hand every event to (`POST /v1/relay/batches`) instead of forwarding
    /// to Campaign; `nil`: forward to the hosts, if any.
    public var upstreamRelay: CampaignHost?
    /// The central relay's `--relay-token`, presented with every batch.
    public var upstreamToken: String?
    /// Sinks the default tenant's list takes besides those the options above make (``sinkLists``):
    /// a sink no option names yet (a test's own). Empty by default.
    public var additionalSinks: [any Sink] = []
    /// The fleet's PostgreSQL (`--postgres-url`): this relay's counts go there too, and
    /// `GET /v1/deliveries` answers the fleet's; `nil`: aggregates.sqlite only.
    public var postgres: PostgresLocation?
    /// The log in PostgreSQL (`--log-postgres-url`) instead of segment files under the data
    /// directory; `nil`: the file log.
    public var logPostgres: PostgresLogSettings?
    /// The token other relays present to hand their events to this one (`POST /v1/relay/batches`);
    /// `nil`: the endpoint does not exist.
    public var relayToken: String?
    /// How long a connection that is not waiting for an answer may go without a part of a request
    /// arriving: nothing at all, a request head trickling in a byte at a time (slowloris), a
    /// stalled body. Then it is closed, so slow or idle clients cannot hold descriptors.
    public var idleTimeout: Duration = .seconds(60)
    /// The largest request body accepted on `POST /v1/events`.
    public var maximumBatchBytes = 4 << 20
    /// The most events in one `POST /v1/events`.
    public var maximumBatchEvents = 10_000
    /// The largest registration form accepted (the SDKs send well under 4 KiB).
    public var maximumFormBytes = 64 << 10
    /// How long `Idempotency-Key`s are remembered.
    public var idempotencyWindow: Duration = .seconds(24 * 3600)
    /// The longest a graceful shutdown may take before work is cancelled (after ``shutdownDelay``).
    public var shutdownTimeout: Duration = .seconds(10)
    /// How long the listener stays open after SIGTERM, answering new events and `/readyz` with
    /// 503, before it closes: time for a load balancer to stop sending here, so that no client
    /// meets a refused connection. Zero: close at once.
    public var shutdownDelay: Duration = .zero
    /// Whether the aggregator runs in the server.
    public var aggregates = true
    /// The metrics the server's aggregator counts and `/v1/deliveries` and `/status` show
    /// (``MetricTable``): the standard table unless a test or an embedding adds one.
    public var aggregateMetrics: MetricTable = .standard
    /// SQLite's page cache for the server's aggregator. Smaller than a batch `aggregate`'s
    /// (``Aggregator/defaultPageCacheBytes``): the server counts as events arrive, a few
    /// thousand at a time, and its memory is shared with request handling.
    public var aggregatorPageCacheBytes = 4 << 20
    /// Events the server's aggregator reads and counts per transaction (two batches are in memory
    /// at once: one read ahead while the other is counted).
    public var aggregatorBatchSize = 32_768
    /// Where readiness and shutdown are announced to systemd (`Type=notify`); by default the
    /// socket named by `NOTIFY_SOCKET`, if any.
    public var systemd = SystemdNotifier.fromEnvironment()
    /// TLS on the listener (certificate, key, optional client CAs); `nil`: plain HTTP.
    public var tls: TLSCertificateStore.Files?
    /// Whether SDK tracking hits are answered on the connection's event loop
    /// (``TrackingHitHandler``) rather than by the router. Both answer the same; tests turn it off
    /// to compare the two.
    package var answersTrackingHitsOnEventLoop = true

    /// The defaults (`127.0.0.1:8080`, `./relay-data`, no forwarding).
    public init() {}

    /// Whether the address only accepts connections from this machine.
    public var bindsLoopbackOnly: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

import ArgumentParser
import RelayServer

/// `campaign-relay serve`: the relay's main job.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the relay: HTTP ingest, durable log, aggregates and forwarding in one process.",
        discussion: """
            Endpoints (an SDK can use the relay as its marketing and tracking host):
              POST /nms/mobile/1/registerIOS.jssp, .../registerAndroid.jssp
                  registrations, form data as the SDKs send them
              GET  /r/?id=h{messageId},{deliveryId},{tag}
                  tracking hits (tag 1 impression, 2 open)
              GET  /r/test
                  health text, as Campaign's redirection server answers
              POST /v1/events
                  a JSON array (application/json) or NDJSON (application/x-ndjson)
                  of events; all or nothing; Idempotency-Key supported
              GET  /v1/deliveries, /v1/deliveries/{id}, /v1/deadletters, /metrics
                  admin (Authorization: Bearer <token> with --admin-token)
              POST /v1/privacy/erasures, /v1/wal/seal
                  admin: erase a person's registrations; seal the active segment
                  (`erase` and `wal rekey` call them)
              GET  /status, /v1/status
                  the status page (HTML), and the same as JSON (admin)
              GET  /, /openapi.yaml
                  where to start; the OpenAPI document of every endpoint
              POST /v1/relay/batches
                  other relays' events, exactly once (with --relay-token;
                  see docs/relay-protocol.md). With --upstream-relay, this relay
                  hands its own events on to such a relay instead of to Campaign.
              GET  /healthz, /readyz
                  liveness and the relay id; readiness with the last durable sequence

            Tenants ([tenant.NAME] tables of --config: their own Campaign hosts, keys,
            admin token and share of the log): every path above but /metrics,
            /healthz, /readyz and /v1/relay/batches is also /NAME/..., e.g.
            GET /brand-a/r/?id=..., POST /brand-a/v1/events, GET /brand-a/v1/deliveries.
            A path without a tenant is the default tenant's (the options' hosts).

            Every 200 means the events were fdatasync'ed (with --log-postgres-url:
            committed in PostgreSQL, on two machines with a synchronous standby; see
            docs/high-availability.md). When the log is full, the disk fails, no
            writable primary answers or the relay is stopping: 503 with Retry-After.
            SIGTERM/SIGINT: stop taking events (503, /readyz 503), after
            --shutdown-delay close the listener, finish requests under way, save
            positions, close the log, exit 0. SIGHUP: reload --tls-cert/--tls-key
            and the tenants of --config (other settings apply at the next start).

            While it runs, `ingest` and `deadletter retry` on the same --data-dir
            hand their events to it; `stats` shows its counts.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Address and port to listen on; a non-loopback address needs --admin-token.", valueName: "host:port"))
    var bind: String = "127.0.0.1:8080"

    @Option(
        name: .long,
        help: ArgumentHelp("Accept only these integration keys (repeatable); others are refused (UnknownUUID). Default: any.", valueName: "key"))
    var integrationKey: [String] = []

    @Option(name: .long, help: ArgumentHelp("Bearer token the admin endpoints require (env CAMPAIGN_RELAY_ADMIN_TOKEN).", valueName: "token"))
    var adminToken: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Take other relays' events on POST /v1/relay/batches, from callers presenting this bearer token (env CAMPAIGN_RELAY_RELAY_TOKEN; at least 16 characters). Without it, the endpoint does not exist.",
            valueName: "token"))
    var relayToken: String?

    @OptionGroup var upstreamRelay: UpstreamRelayOptions

    @OptionGroup(title: "Fleet counts") var postgres: PostgresOptions

    @OptionGroup(title: "High availability (the log in PostgreSQL)") var logPostgres: LogPostgresOptions

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds a connection not waiting for an answer may go without a request part arriving (idle, a head trickling in, a stalled body); then it is closed.",
            valueName: "seconds"))
    var idleTimeout: Double = 60

    @Option(name: .long, help: ArgumentHelp("Largest POST /v1/events body.", valueName: "bytes"))
    var maxBodyBytes: Int = 4 << 20

    @Option(name: .long, help: ArgumentHelp("Most events in one POST /v1/events.", valueName: "n"))
    var maxBatchEvents: Int = 10_000

    @Option(name: .long, help: ArgumentHelp("Hours an Idempotency-Key is remembered.", valueName: "hours"))
    var idempotencyWindowHours: Double = 24

    @Option(name: .long, help: ArgumentHelp("Seconds a graceful shutdown may take (after --shutdown-delay).", valueName: "seconds"))
    var shutdownTimeout: Double = 10

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds the listener stays open after SIGTERM, answering new events and /readyz with 503, so a load balancer stops sending first.",
            valueName: "seconds"))
    var shutdownDelay: Double = 0

    @Flag(name: .long, help: "Do not keep aggregates.sqlite (a forwarding-only sidecar); `campaign-relay aggregate` can catch up later.")
    var noAggregates = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "SQLite page cache of the aggregator, in MiB: more counts unique messages faster once their index outgrows it, at the cost of resident memory.",
            valueName: "MiB"))
    var aggregatorCacheMib: Int = 4

    @OptionGroup(title: "TLS") var tls: TLSOptions
    @OptionGroup var upstream: UpstreamOptions
    @OptionGroup var log: LogOptions
    @OptionGroup var common: CommonOptions
    @OptionGroup var configFile: ConfigFileOption

    /// Why `--archive-dir` and the log in PostgreSQL do not go together.
    static let archiveWithPostgresLog =
        "--archive-dir copies segment files, and the log in PostgreSQL (--log-postgres-url) has none: keep its spans longer with --retain instead"

    func validate() throws {
        _ = try BindAddress(bind)
        if logPostgres.logPostgresUrl != nil, log.retention.archiveDir != nil { throw ValidationError(Self.archiveWithPostgresLog) }
        guard aggregatorCacheMib >= 1 else { throw ValidationError("--aggregator-cache-mib must be at least 1") }
        guard maxBodyBytes >= 1024, maxBatchEvents >= 1 else {
            throw ValidationError("--max-body-bytes must be at least 1024 and --max-batch-events at least 1")
        }
        guard idleTimeout > 0, idleTimeout <= 86_400 else { throw ValidationError("--idle-timeout must be above 0 and at most 86400 seconds") }
        guard idempotencyWindowHours > 0, shutdownTimeout > 0 else {
            throw ValidationError("--idempotency-window-hours and --shutdown-timeout must be positive")
        }
        guard shutdownDelay >= 0, shutdownDelay <= 3600 else { throw ValidationError("--shutdown-delay must be between 0 and 3600 seconds") }
        if let adminToken, adminToken.count < 16 { throw ValidationError("--admin-token must be at least 16 characters") }
        if let relayToken, relayToken.count < 16 { throw ValidationError("--relay-token must be at least 16 characters") }
    }

    func run() async throws {
        let address = try BindAddress(bind)
        let (tracking, marketing) = try upstream.hosts(requireOne: false)
        var configuration = RelayServerConfiguration()
        configuration.host = address.host
        configuration.port = address.port
        configuration.dataDirectory = common.dataDir
        configuration.log = try await log.configuration()
        configuration.trackingHost = tracking
        configuration.marketingHost = marketing
        (configuration.trackingSpareHosts, configuration.marketingSpareHosts) = try upstream.spareHosts()
        configuration.upload = try upstream.configuration()
        configuration.integrationKeys = Set(integrationKey)
        configuration.adminToken = adminToken ?? UpstreamOptions.environment("CAMPAIGN_RELAY_ADMIN_TOKEN")
        configuration.relayToken = relayToken ?? UpstreamOptions.environment("CAMPAIGN_RELAY_RELAY_TOKEN")
        if let central = try upstreamRelay.central(campaignHosts: (tracking, marketing)) {
            configuration.upstreamRelay = central.host
            configuration.upstreamToken = central.token
            configuration.upload.clientCertificate = central.clientCertificate
        }
        if let token = configuration.relayToken, token.count < 16 {
            throw ValidationError("CAMPAIGN_RELAY_RELAY_TOKEN must be at least 16 characters")
        }
        configuration.maximumBatchBytes = maxBodyBytes
        configuration.maximumBatchEvents = maxBatchEvents
        configuration.idempotencyWindow = .seconds(Int64(idempotencyWindowHours * 3600))
        configuration.shutdownTimeout = .milliseconds(Int64(shutdownTimeout * 1000))
        configuration.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
        configuration.shutdownDelay = .milliseconds(Int64(shutdownDelay * 1000))
        configuration.aggregates = !noAggregates
        configuration.aggregatorPageCacheBytes = aggregatorCacheMib << 20
        configuration.tls = try tls.files()
        configuration.postgres = try postgres.location()
        if let settings = try logPostgres.settings() {
            if configuration.log.archiveDirectory != nil {
                throw ValidationError(
                    "--archive-dir copies segment files, and the log in PostgreSQL (--log-postgres-url) has none: keep its spans longer with --retain instead"
                )
            }
            configuration.logPostgres = settings
            // Every count goes to the fleet's tables (of the same database unless --postgres-url
            // names another): aggregates.sqlite would be a copy on the disk this mode may lose.
            configuration.aggregates = false
            if configuration.postgres == nil { configuration.postgres = settings.location }
        }
        if let path = configFile.path {
            // Checked against what serve forwards now: a reload changes tenants, not these.
            let (tracking, marketing, central) = (
                configuration.trackingHost != nil, configuration.marketingHost != nil, configuration.upstreamRelay != nil
            )
            let (adminToken, maximumLogBytes) = (configuration.adminToken, configuration.log.maximumLogBytes)
            let read = { @Sendable () async throws -> [TenantConfiguration] in
                let tenants = try await ConfigFileOption.tenants(path: path)
                do throws(ConfigurationFile.Failure) {
                    try TenantTable.check(
                        tenants, path: path, forwardsTracking: tracking, forwardsMarketing: marketing, handsOnToRelay: central,
                        adminToken: adminToken,
                        maximumLogBytes: maximumLogBytes)
                } catch {
                    throw RuntimeFailure(error.description)
                }
                return tenants.map(\.configuration)
            }
            configuration.tenants = try await read()
            configuration.reloadTenants = read
        }
        let server = RelayServer(configuration: configuration, logger: common.logger("campaign-relay"))
        do {
            try await server.run()
        } catch let error as RelayServer.StartupError {
            throw RuntimeFailure(error.description)
        }
    }
}

import ArgumentParser
import CampaignProtocol
import RelayCore
import RelayForwarding

#if canImport(Glibc)
    import Glibc
#endif

/// The Campaign hosts to forward to, from options or the environment.
struct UpstreamOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Campaign tracking host URL (https:// unless given; env CAMPAIGN_RELAY_TRACKING_HOST, comma-separated). Repeat it (a list in the file) for spare hosts: each has a breaker and limit of its own, they share the load, and carry it while one fails.",
            valueName: "url"))
    var trackingHost: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Campaign marketing host URL (https:// unless given; env CAMPAIGN_RELAY_MARKETING_HOST, comma-separated). Repeat it (a list in the file) for spare hosts, as --tracking-host.",
            valueName: "url"))
    var marketingHost: [String] = []

    // With --adaptive-concurrency the limit adapts below it: the flag's help says how.
    @Option(name: .long, help: ArgumentHelp("Requests in flight at once to each host.", valueName: "n"))
    var concurrency: Int = 8

    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "Adapt the requests in flight to each host's answers, up to --concurrency: start at 1, add one while the host's round trip stays near its baseline (the fastest of the last 10 s), halve on 429, 502-504, timeouts or a round trip past twice the baseline (and its usual spread). With --no-adaptive-concurrency, --concurrency are kept in flight."
        )
    )
    var adaptiveConcurrency = true

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Requests (hits or registrations) started per second to each host, at most: evenly, within the first 900 ms of each second of the clock; the backlog waits in the log. A [tenant.NAME] max-rate replaces it for that tenant's hosts.",
            valueName: "n"))
    var maxRate: Int?

    @Option(name: .long, help: ArgumentHelp("Seconds one request may take.", valueName: "seconds"))
    var requestTimeout: Double = 30

    @Option(name: .long, help: ArgumentHelp("Milliseconds: the ceiling of the first retry's random delay (doubles on each retry).", valueName: "ms"))
    var backoffBase: Int = 100

    @Option(name: .long, help: ArgumentHelp("Seconds: the largest retry delay ceiling.", valueName: "seconds"))
    var backoffCap: Double = 60

    @Option(name: .long, help: ArgumentHelp("Retryable failures in a row after which a host is only probed until it answers again.", valueName: "n"))
    var breakerThreshold: Int = 5

    @Option(
        name: .long, help: ArgumentHelp("Most events sent beyond the saved position: after a crash at most this many are sent twice.", valueName: "n")
    )
    var maxUnsynced: Int = 4096

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Failed attempts after which an event goes to the dead letters with its last answer; only failures while the host answers other events count.",
            valueName: "n"))
    var maxAttempts: Int = 20

    @Option(
        name: .long,
        help: ArgumentHelp("An event older than this when an attempt fails goes to the dead letters (e.g. 7d, 12h, 90m).", valueName: "duration"))
    var maxEventAge: String = "7d"

    @Option(
        name: .long,
        help: ArgumentHelp("HTTP statuses retried, comma-separated; any other answer but 200 is a permanent rejection.", valueName: "list"))
    var retryStatus: String = DeliveryOutcome.defaultRetryStatuses.sorted().map(String.init).joined(separator: ",")

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long a delivered JSON/file registration suppresses an identical one for its token (SDK registrations are always forwarded).",
            valueName: "duration"))
    var registrationDedupTtl: String = "7d"

    @Option(
        name: .long,
        help: ArgumentHelp("PEM file of CA certificates trusted for https hosts, besides the system's (a private CA).", valueName: "path"))
    var caFile: String?

    func validate() throws {
        guard maxAttempts >= 1 else { throw ValidationError("--max-attempts must be at least 1") }
        _ = try durations()
        _ = try retryStatuses()
        guard concurrency >= 1, concurrency <= 1024 else { throw ValidationError("--concurrency must be 1 to 1024") }
        guard requestTimeout > 0 else { throw ValidationError("--request-timeout must be positive") }
        guard backoffBase >= 1, backoffCap > 0 else { throw ValidationError("--backoff-base and --backoff-cap must be positive") }
        guard breakerThreshold >= 1 else { throw ValidationError("--breaker-threshold must be at least 1") }
        guard maxUnsynced >= 1 else { throw ValidationError("--max-unsynced must be at least 1") }
        if let maxRate, maxRate < 1 { throw ValidationError("--max-rate must be at least 1 (requests a second); leave it out for no ceiling") }
        // The URLs given as options are checked here, so that `config check` refuses what the
        // command would; the environment's are checked when the command reads them.
        for (values, role) in [(trackingHost, "--tracking-host"), (marketingHost, "--marketing-host")] {
            for value in values {
                do {
                    _ = try CampaignHost(parsing: value, role: role)
                } catch {
                    throw ValidationError(error.description)
                }
            }
            if Set(values).count < values.count { throw ValidationError("\(role) names a host twice: each spare is another host") }
        }
    }

    /// The first hosts, or a validation error naming the setting at fault.
    func hosts(requireOne: Bool = true) throws -> (tracking: CampaignHost?, marketing: CampaignHost?) {
        let all = try hostLists()
        if requireOne, all.tracking.isEmpty, all.marketing.isEmpty {
            throw RuntimeFailure(
                "no Campaign host to send to: give --tracking-host and/or --marketing-host (or CAMPAIGN_RELAY_TRACKING_HOST / CAMPAIGN_RELAY_MARKETING_HOST)"
            )
        }
        return (all.tracking.first, all.marketing.first)
    }

    /// The spare hosts: every host given after the first of each kind.
    func spareHosts() throws -> (tracking: [CampaignHost], marketing: [CampaignHost]) {
        let all = try hostLists()
        return (Array(all.tracking.dropFirst()), Array(all.marketing.dropFirst()))
    }

    /// Every host of each kind, from the options (the file's lists) or the environment's comma-separated lists.
    private func hostLists() throws -> (tracking: [CampaignHost], marketing: [CampaignHost]) {
        func list(_ given: [String], _ environment: String?, role: String) throws -> [CampaignHost] {
            let texts =
                given.isEmpty
                ? (environment?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } ?? [])
                : given
            do {
                return try texts.map { try CampaignHost(parsing: $0, role: role) }
            } catch let error as CampaignHost.ParseError {
                throw RuntimeFailure(error.description)
            }
        }
        return (
            try list(trackingHost, Self.environment("CAMPAIGN_RELAY_TRACKING_HOST"), role: "--tracking-host"),
            try list(marketingHost, Self.environment("CAMPAIGN_RELAY_MARKETING_HOST"), role: "--marketing-host")
        )
    }

    /// The sinks `upload` and `replay` forward to, per tenant: the default tenant's Campaign hosts
    /// (`tracking`, `marketing`, either may be absent, each with its `spares`), then each of `tenants`' own (the
    /// `[tenant.NAME]` sections of `--config`): the one list the uploader, the log's consumers and
    /// the summary come from.
    static func sinkLists(
        tracking: CampaignHost?, marketing: CampaignHost?, spares: (tracking: [CampaignHost], marketing: [CampaignHost]) = ([], []),
        tenants: [TenantDestinations]
    ) -> [SinkList] {
        var sinks: [any Sink] = []
        if let tracking { sinks.append(TrackingHostSink(host: tracking, spares: spares.tracking)) }
        if let marketing { sinks.append(MarketingHostSink(host: marketing, spares: spares.marketing)) }
        return [SinkList(tenant: nil, sinks: sinks)] + tenants.map(\.sinkList)
    }

    /// `--max-event-age` and `--registration-dedup-ttl`.
    func durations() throws -> (maximumEventAge: Duration, deduplication: Duration) {
        guard let age = DurationText.parse(maxEventAge), age > .zero else {
            throw ValidationError("--max-event-age \(maxEventAge) is not a positive duration such as 7d, 12h, 90m or 45s")
        }
        guard let ttl = DurationText.parse(registrationDedupTtl) else {
            throw ValidationError("--registration-dedup-ttl \(registrationDedupTtl) is not a duration such as 7d, 12h, 90m or 0s")
        }
        return (age, ttl)
    }

    /// `--retry-status` as a set.
    func retryStatuses() throws -> Set<Int> {
        var statuses = Set<Int>()
        for part in retryStatus.split(separator: ",", omittingEmptySubsequences: false) {
            let text = part.trimmingCharacters(in: " ")
            guard let status = Int(text), (100...599).contains(status), status != 200 else {
                throw ValidationError(
                    "--retry-status: \(text.isEmpty ? "an empty entry" : "\"\(text)\"") is not an HTTP status from 100 to 599 other than 200")
            }
            statuses.insert(status)
        }
        return statuses
    }

    func configuration() throws -> UploadConfiguration {
        let (age, ttl) = try durations()
        var configuration = UploadConfiguration(
            concurrency: concurrency, requestTimeout: .milliseconds(Int64(requestTimeout * 1000)),
            backoff: Backoff(base: .milliseconds(backoffBase), cap: .milliseconds(Int64(backoffCap * 1000))),
            breakerThreshold: breakerThreshold, maximumUnsyncedEvents: maxUnsynced, maximumRate: maxRate, maximumAttempts: maxAttempts,
            maximumEventAge: age, retryStatuses: try retryStatuses(), registrationDeduplicationWindow: ttl, trustedCertificateAuthorities: caFile
        )
        configuration.adaptiveConcurrency = adaptiveConcurrency
        return configuration
    }

    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }
}

import ArgumentParser
import CampaignProtocol

/// `--upstream-relay` and `--upstream-token`, shared by `serve` and `upload`: hand every event to a
/// central relay instead of to Campaign.
struct UpstreamRelayOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Hand every event to this central relay (POST /v1/relay/batches) instead of to Campaign; while it is unreachable the events wait in the log (env CAMPAIGN_RELAY_UPSTREAM_RELAY).",
            valueName: "url"))
    var upstreamRelay: String?

    @Option(name: .long, help: ArgumentHelp("The central relay's --relay-token (env CAMPAIGN_RELAY_UPSTREAM_TOKEN).", valueName: "token"))
    var upstreamToken: String?

    /// The central relay and its token, when one is given (option or environment); `nil` otherwise.
    ///
    /// - Throws: `ValidationError` beside Campaign hosts or without a token; ``RuntimeFailure``
    ///   for a URL that cannot be used.
    func central(campaignHosts: (tracking: CampaignHost?, marketing: CampaignHost?)) throws -> (host: CampaignHost, token: String)? {
        guard let relay = upstreamRelay ?? UpstreamOptions.environment("CAMPAIGN_RELAY_UPSTREAM_RELAY") else { return nil }
        guard campaignHosts.tracking == nil, campaignHosts.marketing == nil else {
            throw ValidationError(
                "--upstream-relay hands events to a relay, which forwards them to Campaign: leave out --tracking-host and --marketing-host")
        }
        guard let token = upstreamToken ?? UpstreamOptions.environment("CAMPAIGN_RELAY_UPSTREAM_TOKEN") else {
            throw ValidationError("--upstream-relay needs --upstream-token (the central relay's --relay-token)")
        }
        do {
            return (try CampaignHost(parsing: relay, role: "--upstream-relay"), token)
        } catch {
            throw RuntimeFailure(error.description)
        }
    }
}

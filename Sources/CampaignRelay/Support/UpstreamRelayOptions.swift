import ArgumentParser
import CampaignProtocol
import RelayForwarding

/// `--upstream-relay`, `--upstream-token` and the client certificate, shared by `serve` and
/// `upload`: hand every event to a central relay instead of to Campaign.
struct UpstreamRelayOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Hand every event to this central relay (POST /v1/relay/batches) instead of to Campaign; while it is unreachable the events wait in the log (env CAMPAIGN_RELAY_UPSTREAM_RELAY).",
            valueName: "url"))
    var upstreamRelay: String?

    @Option(name: .long, help: ArgumentHelp("The central relay's --relay-token (env CAMPAIGN_RELAY_UPSTREAM_TOKEN).", valueName: "token"))
    var upstreamToken: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A PEM certificate (chain, this relay's first) to present to a central relay that requires client certificates (its --tls-client-ca); with --upstream-client-key (env CAMPAIGN_RELAY_UPSTREAM_CLIENT_CERT).",
            valueName: "pem"))
    var upstreamClientCert: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The PEM private key of --upstream-client-cert (env CAMPAIGN_RELAY_UPSTREAM_CLIENT_KEY).", valueName: "pem"))
    var upstreamClientKey: String?

    /// Where to hand the events on.
    struct Central {
        /// The central relay.
        var host: CampaignHost
        /// Its `--relay-token`.
        var token: String
        /// The certificate to present, when it requires one.
        var clientCertificate: UpstreamTLS.ClientCertificate?

        /// The one list `upload --upstream-relay` forwards to: the central relay's sink.
        var sinkLists: [SinkList] { [SinkList(tenant: nil, sinks: [CentralRelaySink(host: host, token: token)])] }
    }

    /// The central relay, its token and the client certificate, when a relay is given (option or
    /// environment); `nil` otherwise.
    ///
    /// - Throws: `ValidationError` beside Campaign hosts, without a token, with half a client
    ///   certificate or one without a relay; ``RuntimeFailure`` for a URL that cannot be used.
    func central(campaignHosts: (tracking: CampaignHost?, marketing: CampaignHost?)) throws -> Central? {
        let certificateFile = upstreamClientCert ?? UpstreamOptions.environment("CAMPAIGN_RELAY_UPSTREAM_CLIENT_CERT")
        let keyFile = upstreamClientKey ?? UpstreamOptions.environment("CAMPAIGN_RELAY_UPSTREAM_CLIENT_KEY")
        guard let relay = upstreamRelay ?? UpstreamOptions.environment("CAMPAIGN_RELAY_UPSTREAM_RELAY") else {
            if certificateFile != nil || keyFile != nil {
                throw ValidationError("--upstream-client-cert and --upstream-client-key are for --upstream-relay: give the central relay's URL too")
            }
            return nil
        }
        guard campaignHosts.tracking == nil, campaignHosts.marketing == nil else {
            throw ValidationError(
                "--upstream-relay hands events to a relay, which forwards them to Campaign: leave out --tracking-host and --marketing-host")
        }
        guard let token = upstreamToken ?? UpstreamOptions.environment("CAMPAIGN_RELAY_UPSTREAM_TOKEN") else {
            throw ValidationError("--upstream-relay needs --upstream-token (the central relay's --relay-token)")
        }
        let clientCertificate: UpstreamTLS.ClientCertificate?
        switch (certificateFile, keyFile) {
        case (let certificate?, let key?): clientCertificate = UpstreamTLS.ClientCertificate(certificateFile: certificate, keyFile: key)
        case (nil, nil): clientCertificate = nil
        case (_?, nil): throw ValidationError("--upstream-client-cert needs --upstream-client-key (the certificate's private key)")
        case (nil, _?): throw ValidationError("--upstream-client-key needs --upstream-client-cert (the certificate it belongs to)")
        }
        let host: CampaignHost
        do {
            host = try CampaignHost(parsing: relay, role: "--upstream-relay")
        } catch {
            throw RuntimeFailure(error.description)
        }
        if clientCertificate != nil, !relay.lowercased().hasPrefix("https://") {
            throw ValidationError("--upstream-client-cert is presented over TLS only: give an https:// --upstream-relay")
        }
        return Central(host: host, token: token, clientCertificate: clientCertificate)
    }
}

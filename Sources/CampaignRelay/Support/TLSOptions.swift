import ArgumentParser
import RelayTLS

/// TLS on a listener: `--tls-cert`, `--tls-key`, `--tls-client-ca` (or the environment).
struct TLSOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "PEM certificate chain (leaf first) to serve HTTPS with; needs --tls-key (env CAMPAIGN_RELAY_TLS_CERT). Reloaded on SIGHUP.",
            valueName: "pem"))
    var tlsCert: String?

    @Option(name: .long, help: ArgumentHelp("PEM private key of --tls-cert (env CAMPAIGN_RELAY_TLS_KEY).", valueName: "pem"))
    var tlsKey: String?

    @Option(
        name: .long, help: ArgumentHelp("Require client certificates issued by these PEM CAs (env CAMPAIGN_RELAY_TLS_CLIENT_CA).", valueName: "pem"))
    var tlsClientCa: String?

    func validate() throws {
        _ = try files()
    }

    /// The files, or `nil` for plain HTTP.
    func files() throws -> TLSCertificateStore.Files? {
        let certificate = tlsCert ?? UpstreamOptions.environment("CAMPAIGN_RELAY_TLS_CERT")
        let key = tlsKey ?? UpstreamOptions.environment("CAMPAIGN_RELAY_TLS_KEY")
        let clientCA = tlsClientCa ?? UpstreamOptions.environment("CAMPAIGN_RELAY_TLS_CLIENT_CA")
        switch (certificate, key) {
        case (nil, nil):
            if clientCA != nil { throw ValidationError("--tls-client-ca needs --tls-cert and --tls-key (client certificates are a TLS feature)") }
            return nil
        case (let certificate?, let key?):
            return TLSCertificateStore.Files(certificate: certificate, key: key, clientCertificateAuthorities: clientCA)
        case (nil, _):
            throw ValidationError("--tls-key needs --tls-cert (the certificate it belongs to)")
        case (_, nil):
            throw ValidationError("--tls-cert needs --tls-key (its private key)")
        }
    }
}

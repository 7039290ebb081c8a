import RelayCore

/// `GET /`: where a person (or a program) new to the relay starts: the status page, the OpenAPI
/// document, health, metrics and where the documentation is. As JSON (`{"documentation":…,…}`,
/// docs/openapi.yaml `Index`) or as a short HTML page with the same links.
struct RelayIndex: Encodable {
    var name = "campaign-relay"
    var version = RelayVersion.current
    var status = "/status"
    var statusFigures = "/v1/status"
    var openapi = "/openapi.yaml"
    var health = "/healthz"
    var ready = "/readyz"
    var metrics = "/metrics"
    var documentation = RelayIndex.whereTheDocumentationIs

    /// The documentation is not served (it is the source's `README.md` and `docs/`): the index
    /// says where it is, and which file answers which question.
    static let whereTheDocumentationIs =
        "README.md and docs/ of the campaign-relay source: docs/campaign-protocol.md (the Campaign wire protocol the SDK endpoints speak), docs/sdk-edge.md (what the SDK endpoints take and forward), docs/configuration.md (every option), docs/metrics.md; campaign-relay help COMMAND on the command line"

    /// The page for a browser: the same links, nothing else (no script, no figure).
    var html: String {
        let links = [
            (status, "the status page: intake, the log, each destination, dead letters, counts"),
            (openapi, "the HTTP API (OpenAPI 3.1), as this binary was built with it"),
            (statusFigures, "the status page's figures as JSON"),
            (health, "the process answers"), (ready, "it takes events"),
            (metrics, "Prometheus metrics"),
        ]
        let items = links.map { #"<li><a href="\#($0.0)">\#($0.0)</a>: \#($0.1)</li>"# }.joined(separator: "\n")
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>campaign-relay</title>
            <style>body { font: 15px/1.5 system-ui, sans-serif; margin: 32px auto; max-width: 720px; padding: 0 16px; color: #1d2330; }</style>
            </head>
            <body>
            <h1>campaign-relay \(version)</h1>
            <p>A durable relay of Adobe Campaign mobile events.</p>
            <ul>
            \(items)
            </ul>
            <p>Documentation: \(documentation).</p>
            </body>
            </html>

            """
    }
}

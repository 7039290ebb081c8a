import ArgumentParser
import RelayLog
import RelayPostgres
import RelayServer

/// `serve --log-postgres-url`, `--relay-name`, `--lease-seconds`: the log in PostgreSQL, so that
/// an acknowledgement survives the loss of this machine (docs/high-availability.md).
struct LogPostgresOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Keep the log in PostgreSQL instead of wal/ under --data-dir: postgres://USER[:PASSWORD]@HOST[:PORT][,HOST2...]/DB, with ?sslmode= as --postgres-url and target_session_attrs= read-write (the default with several hosts: the writable primary among them) or any. Every 200 then follows a commit (on two machines with a synchronous standby); while no writable primary answers, ingest answers 503. The counts go to the same database unless --postgres-url names another (env CAMPAIGN_RELAY_LOG_POSTGRES_URL).",
            valueName: "url"))
    var logPostgresUrl: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "This relay's stream in the log database (1 to 96 letters, digits, '-' or '_'). A relay started again under the same name, even on an empty --data-dir, takes its stream back. Default: the relay id of --data-dir.",
            valueName: "name"))
    var relayName: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds a relay may go unheard before another adopts its stream and forwards what it owes; its lanes stop sending before then.",
            valueName: "seconds"))
    var leaseSeconds: Int = 10

    func validate() throws {
        try StoredLogOptions.validate(relayName: relayName, url: StoredLogOptions.url(logPostgresUrl))
        guard (2...3600).contains(leaseSeconds) else { throw ValidationError("--lease-seconds must be from 2 to 3600") }
    }

    /// The settings, when `--log-postgres-url` (or its variable) is given.
    ///
    /// - Throws: ``RuntimeFailure`` for a URL that cannot be used.
    func settings() throws -> PostgresLogSettings? {
        guard let url = StoredLogOptions.url(logPostgresUrl) else { return nil }
        return PostgresLogSettings(location: try StoredLogOptions.location(url), relayName: relayName, lease: .seconds(leaseSeconds))
    }
}

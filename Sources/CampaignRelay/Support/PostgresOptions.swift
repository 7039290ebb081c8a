import ArgumentParser
import RelayPostgres

/// `--postgres-url`, shared by `aggregate`, `serve` and `stats`: the fleet's counts in PostgreSQL.
struct PostgresOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The fleet's PostgreSQL, postgres://USER[:PASSWORD]@HOST[:PORT]/DB, with ?sslmode= disable, prefer (default), require, verify-ca or verify-full: the counts of every relay in one place, exactly once (env CAMPAIGN_RELAY_POSTGRES_URL).",
            valueName: "url"))
    var postgresUrl: String?

    /// The database, when one is given (option or environment).
    ///
    /// - Throws: ``RuntimeFailure`` for a URL that cannot be used.
    func location() throws -> PostgresLocation? {
        guard let url = postgresUrl ?? UpstreamOptions.environment("CAMPAIGN_RELAY_POSTGRES_URL") else { return nil }
        do {
            return try PostgresLocation(url: url)
        } catch {
            throw RuntimeFailure(error.description)
        }
    }
}

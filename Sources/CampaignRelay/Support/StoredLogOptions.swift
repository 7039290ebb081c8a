import ArgumentParser
import RelayForwarding
import RelayLog
import RelayPostgres

/// `--log-postgres-url` and `--relay-name` of the commands that work on a log without opening it
/// (`replay`, `wal dump`, `wal verify`, `wal rekey`, `deadletter`): a relay's stream of the log
/// kept in PostgreSQL, and its dead letters, instead of the segment files and `forwarding.sqlite`
/// under `--data-dir`. The spelling is serve's, so that a configuration file's
/// `log-postgres-url` means the log's database here too (its `postgres-url` is the counts').
struct StoredLogOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Work on the log kept in PostgreSQL (serve's --log-postgres-url) instead of wal/ under --data-dir: the stream of --relay-name, and its dead letters (env CAMPAIGN_RELAY_LOG_POSTGRES_URL).",
            valueName: "url"))
    var logPostgresUrl: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The stream to read from the log database: the --relay-name the relay was served under. Default: the relay id of --data-dir.",
            valueName: "name"))
    var relayName: String?

    /// The URL given by option or environment, if any.
    var url: String? { Self.url(logPostgresUrl) }

    func validate() throws {
        try Self.validate(relayName: relayName, url: url)
    }

    /// `--log-postgres-url`'s value, or else `CAMPAIGN_RELAY_LOG_POSTGRES_URL`'s (serve's too).
    static func url(_ option: String?) -> String? { option ?? UpstreamOptions.environment("CAMPAIGN_RELAY_LOG_POSTGRES_URL") }

    /// Fails for a `--relay-name` without a log database to name a stream of, or not a stream's
    /// name (serve's check too).
    static func validate(relayName: String?, url: String?) throws {
        if url == nil, relayName != nil {
            throw ValidationError("--relay-name names a stream of the log in PostgreSQL: give --log-postgres-url too")
        }
        if let relayName, (try? CursorStore.validate(relayName)) == nil {
            throw ValidationError("--relay-name \(relayName): use 1 to 96 letters, digits, '-' or '_'")
        }
    }

    /// The log database at `url`.
    ///
    /// - Throws: ``RuntimeFailure`` for a URL that cannot be used.
    static func location(_ url: String) throws -> PostgresLocation {
        do {
            return try PostgresLocation(url: url, option: "--log-postgres-url")
        } catch {
            throw RuntimeFailure(error.description)
        }
    }

    /// The stream in PostgreSQL, when a URL is given; `nil` for the files under `dataDirectory`.
    ///
    /// - Throws: ``RuntimeFailure`` for a URL that cannot be used, a database that cannot be read,
    ///   or a stream it does not hold.
    func stream(dataDirectory: String, keys: LogKeyRing?) async throws -> StoredLog? {
        guard let (location, name) = try await named(dataDirectory: dataDirectory) else { return nil }
        do {
            return try await PostgresStoredStream.open(location: location, stream: name, keys: keys)
        } catch {
            throw RuntimeFailure(error.description)
        }
    }

    /// The forwarding store of `dataDirectory`; with a URL, its dead letters are the stream's in
    /// the log database (``PostgresDeadLetters``), and `place` says so.
    ///
    /// - Throws: ``RuntimeFailure`` for a URL that cannot be used, a database that cannot be read,
    ///   a stream it does not hold, or a store that cannot be opened.
    func forwardingStore(dataDirectory: String, keys: LogKeyRing?) async throws -> (store: ForwardingStore, place: String) {
        var table: PostgresDeadLetters?
        var place = ForwardingStore.path(dataDirectory: dataDirectory)
        if let (location, name) = try await named(dataDirectory: dataDirectory) {
            do {
                try await PostgresStoredStream.requireStream(name, in: location)
            } catch {
                throw RuntimeFailure(error.description)
            }
            table = PostgresDeadLetters(location: location, stream: name, fence: nil)
            place = "the dead letters of stream \(name) in \(location)"
        }
        do {
            return (try await ForwardingStore(dataDirectory: dataDirectory, keys: keys, table: table), place)
        } catch {
            throw RuntimeFailure("opening \(ForwardingStore.path(dataDirectory: dataDirectory)): \(error)")
        }
    }

    /// The database and the stream's name, when a URL is given (the stream is not looked for).
    ///
    /// - Throws: ``RuntimeFailure`` for a URL that cannot be used, or no name to go by.
    func named(dataDirectory: String) async throws -> (location: PostgresLocation, stream: String)? {
        guard let url else { return nil }
        let location = try Self.location(url)
        let name: String
        if let relayName {
            name = relayName
        } else if let identity = RelayIdentity.read(dataDirectory: dataDirectory) {
            name = identity.relayID
        } else {
            let held = (try? await PostgresStoredStream.streams(in: location)) ?? []
            throw RuntimeFailure(
                "which stream? \(dataDirectory) names no relay: give --relay-name"
                    + (held.isEmpty ? "" : " (the log database holds \(held.map { "'\($0)'" }.joined(separator: ", ")))"))
        }
        return (location, name)
    }
}

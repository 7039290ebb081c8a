public import RelayPostgres

/// `serve --log-postgres-url`: the log kept in PostgreSQL, one stream per relay, with leases on
/// forwarding so that another relay adopts the stream of one that stopped
/// (docs/high-availability.md).
public struct PostgresLogSettings: Sendable {
    /// The log's database (libpq's multi-host URL allowed).
    public var location: PostgresLocation
    /// This relay's stream (`--relay-name`); `nil`: the relay id of the data directory's identity.
    public var relayName: String?
    /// How long a relay may go unheard before another adopts its stream (`--lease-seconds`).
    public var lease: Duration

    /// Settings from their parts.
    public init(location: PostgresLocation, relayName: String?, lease: Duration) {
        self.location = location
        self.relayName = relayName
        self.lease = lease
    }
}

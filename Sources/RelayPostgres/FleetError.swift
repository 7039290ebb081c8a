import PostgresNIO
public import RelayLog

/// Why fleet aggregation could not do its work. None of these changes the log, and none leaves
/// counts without their position: a failed transaction is rolled back whole.
public enum FleetError: Error, Sendable, CustomStringConvertible {
    /// PostgreSQL refused or failed a statement, or could not be reached.
    case database(String)
    /// Another aggregator of this relay moved its position (two processes count one data directory).
    case positionMoved(expected: UInt64, found: UInt64)
    /// The database knows a newer epoch of this relay than the data directory's: this directory is
    /// an older copy of a relay that went on elsewhere.
    case staleCopy(relayID: String, databaseEpoch: UInt32, directoryEpoch: UInt32)
    /// The log no longer holds events the fleet counts need.
    case logTrimmed(needed: UInt64, oldest: UInt64)
    /// Reading the log failed.
    case log(LogError)
    /// The fleet schema is newer than this relay.
    case schema(FleetSchema.Mismatch)

    public var description: String {
        switch self {
        case .database(let message):
            "PostgreSQL: \(message)"
        case .positionMoved(let expected, let found):
            "another aggregator of this relay moved its position in PostgreSQL from \(expected) to \(found); run one aggregator per data directory"
        case .staleCopy(let relayID, let databaseEpoch, let directoryEpoch):
            "PostgreSQL has relay \(relayID) at epoch \(databaseEpoch), this data directory is at epoch \(directoryEpoch): it is an older copy of a relay that went on elsewhere; counting it would count events twice, so it is refused"
        case .logTrimmed(let needed, let oldest):
            "the fleet counts of this relay need events from sequence \(needed), but the log now starts at \(oldest); those events are gone"
        case .log(let error):
            "reading the log: \(error)"
        case .schema(let mismatch):
            mismatch.description
        }
    }

    /// A PostgresNIO error in words: the server's SQLSTATE and message when it answered, the
    /// client's reason otherwise (PostgresNIO hides both from `description`).
    public static func describe(_ error: any Error) -> FleetError {
        if let fleet = error as? FleetError { return fleet }
        if let mismatch = error as? FleetSchema.Mismatch { return .schema(mismatch) }
        return .database(reason(error))
    }

    /// The words of `error` alone, without a prefix.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let info = error.serverInfo { return "\(info[.message] ?? "error") (SQLSTATE \(info[.sqlState] ?? "?"))" }
        // A failure to connect wraps the socket's error, whose words say what happened.
        if let underlying = error.underlying { return "\(underlying)" }
        return "\(error.code)"
    }
}

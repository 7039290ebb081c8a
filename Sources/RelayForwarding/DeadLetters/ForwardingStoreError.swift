public import RelayLog
public import RelaySQLite

/// Why the forwarding store (`forwarding.sqlite`, or the dead letters' table) could not do what was asked.
public enum ForwardingStoreError: Error, Sendable, CustomStringConvertible {
    /// SQLite failed.
    case database(SQLiteError)
    /// A dead letter's sealed value could not be opened (a missing or wrong key), or a value not
    /// sealed; `letter` is the dead letter's id, when there is one.
    case sealed(FrameEncryptionError, letter: Int64?)
    /// The table that keeps the dead letters in the log's database failed (``DeadLetterTable``).
    case table(DeadLetterTableError)
    /// There is no dead letter with this id (in this relay's stream, on the log in PostgreSQL).
    case noSuchLetter(Int64)

    public var description: String {
        switch self {
        case .database(let error):
            "\(error)"
        case .sealed(let error, let letter?):
            "dead letter \(letter) cannot be read: \(error)"
        case .sealed(let error, nil):
            "a dead letter cannot be sealed: \(error)"
        case .table(let error):
            "\(error)"
        case .noSuchLetter(let id):
            "no dead letter with id \(id); see campaign-relay deadletter list"
        }
    }
}

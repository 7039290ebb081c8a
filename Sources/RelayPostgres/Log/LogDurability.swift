import NIOConcurrencyHelpers
import PostgresNIO

/// How many machines an acknowledgement is on, as the log's database says: read from
/// `synchronous_commit`, `synchronous_standby_names` and `pg_stat_replication` at start and then
/// every lease renewal, shown at start, on `/status`, `/v1/status` and `/metrics`. It never
/// claims more than PostgreSQL promises: a standby listed but not streaming counts for nothing.
public final class LogDurability: Sendable {
    /// What was last read.
    public struct Reading: Sendable, Equatable, Encodable {
        /// Where the log is: `"files"` or `"postgresql"`.
        public var store: String
        /// Machines a commit is on when it returns: 1, plus each synchronous standby streaming.
        public var copies: Int
        /// `synchronous_commit` (PostgreSQL only).
        public var synchronousCommit: String?
        /// `synchronous_standby_names` (PostgreSQL only).
        public var synchronousStandbyNames: String?
        /// Standbys `pg_stat_replication` shows in sync (or quorum) state (PostgreSQL only).
        public var synchronousStandbys: [String]?
        /// Why the last reading failed, when it did (the figures are then the last read).
        public var lastError: String?

        /// The file log: this machine's disk.
        public static let files = Reading(store: "files", copies: 1)

        /// A reading from its parts.
        public init(
            store: String, copies: Int, synchronousCommit: String? = nil, synchronousStandbyNames: String? = nil,
            synchronousStandbys: [String]? = nil, lastError: String? = nil
        ) {
            self.store = store
            self.copies = copies
            self.synchronousCommit = synchronousCommit
            self.synchronousStandbyNames = synchronousStandbyNames
            self.synchronousStandbys = synchronousStandbys
            self.lastError = lastError
        }

        /// "1 copy", "2 copies".
        public var copiesText: String { copies == 1 ? "1 copy" : "\(copies) copies" }
    }

    private let state: NIOLockedValueBox<Reading>

    /// Starting from `reading`.
    public init(_ reading: Reading) {
        state = NIOLockedValueBox(reading)
    }

    /// The last reading.
    public var current: Reading { state.withLockedValue { $0 } }

    func update(_ change: (inout Reading) -> Void) { state.withLockedValue { change(&$0) } }

    /// Reads the database's settings and its synchronous standbys.
    static func read(on connection: PostgresConnection, logger: Logger) async throws -> Reading {
        var commit = "on"
        var names = ""
        for try await (setting, standbys) in try await connection.query(
            "SELECT current_setting('synchronous_commit'), current_setting('synchronous_standby_names')", logger: logger
        ).decode((String, String).self) {
            (commit, names) = (setting, standbys)
        }
        var synchronous: [String] = []
        var hidden = 0
        for try await (name, state) in try await connection.query(
            "SELECT application_name, sync_state FROM pg_stat_replication ORDER BY application_name", logger: logger
        ).decode((String, String?).self) {
            switch state {
            case "sync", "quorum": synchronous.append(name)
            case nil: hidden += 1
            default: break
            }
        }
        // Only these settings make a commit wait for a standby; `local` and `off` do not.
        let waits = ["on", "remote_write", "remote_apply"].contains(commit)
        return Reading(
            store: "postgresql", copies: 1 + (waits ? min(requiredStandbys(names), synchronous.count) : 0), synchronousCommit: commit,
            synchronousStandbyNames: names, synchronousStandbys: synchronous,
            lastError: hidden == 0
                ? nil
                : "pg_stat_replication hides the state of \(hidden) standby(s) from this database user, so they are not counted: GRANT pg_read_all_stats TO the relay's user"
        )
    }

    /// The standbys a commit waits for under `synchronous_standby_names`: `N (…)`, `FIRST N (…)`
    /// or `ANY N (…)` wait for N; a plain list for its first; an empty setting for none. With
    /// `ANY 1 (a, b)` both show `quorum` in `pg_stat_replication`, yet a commit is on two machines,
    /// not three.
    static func requiredStandbys(_ names: String) -> Int {
        var rest = Substring(names).drop { $0.isWhitespace }
        guard !rest.isEmpty else { return 0 }
        for keyword in ["ANY", "FIRST"] where rest.uppercased().hasPrefix(keyword + " ") {
            rest = rest.dropFirst(keyword.count).drop { $0.isWhitespace }
        }
        let digits = rest.prefix { $0.isNumber }
        guard let count = Int(digits), rest.dropFirst(digits.count).drop(while: { $0.isWhitespace }).hasPrefix("(") else { return 1 }
        return count
    }
}

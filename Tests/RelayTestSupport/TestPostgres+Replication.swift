import Foundation
import NIOConcurrencyHelpers
import RelayIO

#if canImport(Glibc)
    import Glibc
#endif

/// A throw-away replicated PostgreSQL cluster on loopback, for the thorough tier: a primary, and a
/// standby made from it with `pg_basebackup -R -X stream`, streaming, named in the primary's
/// `synchronous_standby_names` (so a COMMIT returns only once the standby has the WAL), each a
/// ``TestPostgres`` on a port of its own. ``killPrimary()`` and ``promoteStandby()`` are the
/// failover; ``destroy()`` removes both.
public final class ReplicatedTestPostgres: Sendable {
    /// The server that takes writes at the start.
    public let primary: TestPostgres
    /// The synchronous standby (`application_name=standby1`), promoted by ``promoteStandby()``.
    public let standby: TestPostgres
    /// Whether ``killPrimary()`` ran: a dead postmaster leaves nothing to stop, and `pg_ctl stop`
    /// would wait its whole timeout for a pid file nobody removes.
    private let primaryKilled = NIOLockedValueBox(false)

    /// The standby's name in `synchronous_standby_names` and `pg_stat_replication`.
    public static let standbyName = "standby1"

    /// libpq's multi-host form, primary first, that only a writable server satisfies:
    /// `postgres://postgres@127.0.0.1:P1,127.0.0.1:P2/postgres?sslmode=disable&target_session_attrs=read-write`.
    public var url: String {
        "postgres://postgres@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/postgres?sslmode=disable&target_session_attrs=read-write"
    }

    /// Makes the primary, the standby from it, waits until the standby streams, then makes it
    /// synchronous and waits until `pg_stat_replication` says `sync`.
    ///
    /// The order matters: with `synchronous_standby_names` set before the standby exists, every
    /// commit on the primary would wait for ever.
    ///
    /// - Throws: ``TestPostgres/Failure`` when a step fails or a wait runs out (60 s each); what
    ///   was made is destroyed first.
    public static func start() async throws -> ReplicatedTestPostgres {
        let primary = try await TestPostgres.executor.run { () throws(any Error) -> TestPostgres in
            let primary = try TestPostgres(tls: false)
            // wal_level replica and 10 senders are PostgreSQL's defaults since 10; said here so
            // that a changed default or a packaged postgresql.conf cannot silently turn them off.
            try append("\nwal_level = replica\nmax_wal_senders = 10\nwal_keep_size = '256MB'\n", to: "\(primary.root)/data/postgresql.conf")
            try append("\nhost replication all 127.0.0.1/32 trust\n", to: "\(primary.root)/data/pg_hba.conf")
            try primary.control("start")
            return primary
        }
        let standby: TestPostgres
        do {
            standby = try await TestPostgres.executor.run { () throws(any Error) -> TestPostgres in
                let standby = try TestPostgres(tls: false, initialize: false)
                try standby.runAsOwner(
                    "\(standby.binaries)/pg_basebackup",
                    [
                        "-D", "\(standby.root)/data", "-R", "-X", "stream", "--checkpoint=fast", "--no-sync", "-d",
                        "host=127.0.0.1 port=\(primary.port) user=postgres application_name=\(standbyName)",
                    ])
                try standby.control("start")
                return standby
            }
        } catch {
            await primary.destroy()
            throw error
        }
        let cluster = ReplicatedTestPostgres(primary: primary, standby: standby)
        do {
            try await cluster.poll("the standby streaming from the primary") {
                try await primary.psql("SELECT count(*) FROM pg_stat_replication WHERE application_name = '\(standbyName)' AND state = 'streaming'")
                    == "1"
            }
            _ = try await primary.psql("ALTER SYSTEM SET synchronous_standby_names = '\(standbyName)'")
            _ = try await primary.psql("SELECT pg_reload_conf()")
            try await cluster.poll("the standby synchronous") {
                try await primary.psql("SELECT sync_state FROM pg_stat_replication WHERE application_name = '\(standbyName)'") == "sync"
            }
        } catch {
            await cluster.destroy()
            throw error
        }
        return cluster
    }

    private init(primary: TestPostgres, standby: TestPostgres) {
        self.primary = primary
        self.standby = standby
    }

    /// SIGKILL to the primary's postmaster (the pid on the first line of `postmaster.pid`): no
    /// shutdown, no checkpoint, no last WAL sent. Returns once the primary refuses connections.
    public func killPrimary() async throws {
        let pidFile = "\(primary.root)/data/postmaster.pid"
        let pid = try await TestPostgres.executor.run { () throws(any Error) -> Int32 in
            let text = try String(contentsOfFile: pidFile, encoding: .utf8)
            guard let line = text.split(separator: "\n").first, let pid = Int32(line.trimmingCharacters(in: .whitespaces)), pid > 0 else {
                throw TestPostgres.Failure(description: "no postmaster pid in \(pidFile): \(text)")
            }
            return pid
        }
        primaryKilled.withLockedValue { $0 = true }
        guard kill(pid, SIGKILL) == 0 else {
            throw TestPostgres.Failure(description: "kill -9 \(pid) (the primary's postmaster) failed: errno \(errno)")
        }
        // Its listening socket closes with it; the backends notice their postmaster's death and exit.
        let port = primary.port
        try await poll("the killed primary to refuse connections") { await !TestPostgres.executor.run { Self.accepts(port: port) } }
    }

    /// `pg_ctl promote` of the standby, waiting until `pg_is_in_recovery()` is false.
    public func promoteStandby() async throws {
        try await TestPostgres.executor.run { () throws(any Error) in
            try self.standby.runAsOwner("\(self.standby.binaries)/pg_ctl", ["-D", "\(self.standby.root)/data", "-w", "-t", "60", "promote"])
        }
        try await poll("the promoted standby out of recovery") { try await self.standby.psql("SELECT pg_is_in_recovery()") == "f" }
    }

    /// Stops both servers (a killed primary has nothing to stop) and removes their directories.
    public func destroy() async {
        await standby.destroy()
        if primaryKilled.withLockedValue({ $0 }) {
            let root = primary.root
            await TestPostgres.executor.run { try? FileManager.default.removeItem(atPath: root) }
        } else {
            await primary.destroy()
        }
    }

    /// Checks `condition` every 100 ms for at most `seconds`; a check that throws counts as not yet
    /// (a server starting refuses connections); throws ``TestPostgres/Failure`` at the end.
    private func poll(_ what: String, seconds: Double = 60, _ condition: @Sendable () async throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        var last = ""
        repeat {
            do {
                if try await condition() { return }
            } catch {
                last = " (last: \(error))"
            }
            try await Task.sleep(for: .milliseconds(100))
        } while Date() < deadline
        throw TestPostgres.Failure(description: "waited \(seconds) s for \(what)\(last)")
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port` (a non-blocking connect to
    /// loopback completes or is refused at once).
    private static func accepts(port: Int) -> Bool {
        // No socket to try with: taken as accepting, so that the caller does not wait on it.
        LoopbackSocket.connects(port: port) ?? true
    }

    /// Appends `text` to a file PostgreSQL's owner made (appending keeps its owner and mode).
    private static func append(_ text: String, to path: String) throws {
        guard let handle = FileHandle(forWritingAtPath: path) else { throw TestPostgres.Failure(description: "cannot open \(path) to append") }
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
    }
}

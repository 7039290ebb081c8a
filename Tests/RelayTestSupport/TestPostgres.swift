import Foundation
import RelayIO

#if canImport(Glibc)
    import Glibc
#endif

/// A throw-away PostgreSQL cluster for one test: `initdb` in a temporary directory (as the
/// `postgres` user when the tests run as root, as PostgreSQL refuses root), started with `pg_ctl`
/// on a free loopback port, removed by ``destroy()``. Its blocking steps run on a thread of their
/// own, never on the cooperative pool.
public final class TestPostgres: Sendable {
    /// The cluster's port on 127.0.0.1.
    public let port: Int
    /// The data directory (with `socket/` and `server.log` beside it in ``root``).
    public let root: String
    /// The directory of PostgreSQL's programs (`/usr/lib/postgresql/N/bin`).
    let binaries: String
    /// Whether the server offers TLS, with the self-signed certificate ``certificate``.
    public let tls: Bool

    /// The server's certificate (CN localhost, for localhost and 127.0.0.1) when ``tls``.
    public var certificate: String { "\(root)/server.crt" }

    /// `postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable`.
    public var url: String { "postgres://postgres@127.0.0.1:\(port)/postgres?sslmode=disable" }

    /// Why a cluster could not be made or controlled.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Where every blocking step of every cluster runs (one thread: never the cooperative pool).
    static let executor = BlockingExecutor(name: "test-postgres")

    /// Makes and starts a cluster.
    ///
    /// - Throws: ``Failure`` when PostgreSQL is not installed (`apt-get install postgresql`,
    ///   which `.ci/run` does) or does not start.
    public static func start(tls: Bool = false) async throws -> TestPostgres {
        try await executor.run { () throws(any Error) -> TestPostgres in
            let postgres = try TestPostgres(tls: tls)
            try postgres.control("start")
            return postgres
        }
    }

    /// Chooses the binaries, a directory and a free port; with `initialize`, `initdb` makes the
    /// data directory (a standby's comes from `pg_basebackup` instead: TestPostgres+Replication.swift).
    init(tls: Bool, initialize: Bool = true) throws {
        self.tls = tls
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        guard let version = versions.compactMap(Int.init).max() else {
            throw Failure(description: "PostgreSQL is not installed (no /usr/lib/postgresql/N/bin): apt-get install postgresql, as .ci/run does")
        }
        binaries = "/usr/lib/postgresql/\(version)/bin"
        root = "/tmp/campaign-relay-postgres-\(UInt64.random(in: 0...UInt64.max))"
        port = try Self.freePort()
        try FileManager.default.createDirectory(atPath: "\(root)/socket", withIntermediateDirectories: true)
        if getuid() == 0 { try Self.run("/bin/chown", ["-R", "postgres:postgres", root]) }
        guard initialize else { return }
        try runAsOwner("\(binaries)/initdb", ["-D", "\(root)/data", "-A", "trust", "-U", "postgres", "--no-sync"])
        if tls {
            try Self.run(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(root)/server.key", "-out", "\(root)/server.crt", "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                ])
            chmod("\(root)/server.key", 0o600)
            // TCP only over TLS: a client that got in used it.
            try "local all all trust\nhostssl all all 127.0.0.1/32 trust\n".write(
                toFile: "\(root)/data/pg_hba.conf", atomically: false, encoding: .utf8)
            if getuid() == 0 { try Self.run("/bin/chown", ["postgres:postgres", "\(root)/server.key", "\(root)/server.crt"]) }
        }
    }

    private var serverOptions: String {
        "-p \(port) -k \(root)/socket -c listen_addresses=127.0.0.1"
            + (tls ? " -c ssl=on -c ssl_cert_file=\(root)/server.crt -c ssl_key_file=\(root)/server.key" : "")
    }

    /// `pg_ctl start`, `stop -m fast`, or `restart -m immediate` (a crash and recovery).
    func control(_ action: String) throws {
        var arguments = ["-D", "\(root)/data", "-w", "-t", "60", "-l", "\(root)/server.log"]
        switch action {
        case "start":
            arguments += ["-o", serverOptions, "start"]
        case "restart":
            arguments += ["-m", "immediate", "-o", serverOptions, "restart"]
        default:
            arguments += ["-m", "fast", "stop"]
        }
        try runAsOwner("\(binaries)/pg_ctl", arguments)
    }

    /// Stops the server (fast shutdown); ``resume()`` starts it again on the same port.
    public func stop() async throws {
        try await Self.executor.run { () throws(any Error) in try self.control("stop") }
    }

    /// Starts a stopped server again.
    public func resume() async throws {
        try await Self.executor.run { () throws(any Error) in try self.control("start") }
    }

    /// `pg_ctl restart -m immediate`: the server dies without a checkpoint and recovers from its WAL.
    public func restartImmediately() async throws {
        try await Self.executor.run { () throws(any Error) in try self.control("restart") }
    }

    /// Runs `sql` with psql and returns its unaligned, tuples-only output.
    public func psql(_ sql: String) async throws -> String {
        try await Self.executor.run { () throws(any Error) -> String in
            try Self.run("\(self.binaries)/psql", ["-X", "-q", "-A", "-t", "-h", "127.0.0.1", "-p", "\(self.port)", "-U", "postgres", "-c", sql])
        }
    }

    /// Stops the server and removes its directory.
    public func destroy() async {
        try? await stop()
        await Self.executor.run { try? FileManager.default.removeItem(atPath: self.root) }
    }

    func runAsOwner(_ program: String, _ arguments: [String]) throws {
        if getuid() == 0 {
            _ = try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments)
        } else {
            _ = try Self.run(program, arguments)
        }
    }

    /// Runs a program to its end (a ``SpawnedProcess``: Foundation's `Process` would wait for the
    /// server `pg_ctl` starts, which keeps descriptors it shares with its parent open for its whole
    /// life). Output goes to a file, not a pipe, for the same reason.
    @discardableResult
    static func run(_ program: String, _ arguments: [String]) throws -> String {
        let outputPath = "/tmp/campaign-relay-postgres-output-\(UInt64.random(in: 0...UInt64.max))"
        defer { unlink(outputPath) }
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess(program, arguments, output: .file(outputPath), error: .sameAsOutput)
        } catch {
            throw Failure(description: error.description)
        }
        process.waitUntilExit()
        let text = ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw Failure(
                description:
                    "\(program) \(arguments.joined(separator: " ")) failed (\(process.terminationReason) \(process.terminationStatus)): \(text)")
        }
        return text
    }

    private static func freePort() throws -> Int {
        guard let held = LoopbackSocket.bound() else { throw Failure(description: "no free port on 127.0.0.1: socket() or bind() failed") }
        close(held.descriptor)
        return held.port
    }
}

import Foundation
import RelayProcessTestSupport
import TestTiers
import Testing

/// `serve --log-postgres-url`, `--relay-name`, `--lease-seconds` and `--archive-dir` checked before
/// anything runs: a wrong combination is a usage error (exit 64, the serve usage), a URL that is not
/// one or a database that does not answer a runtime error (exit 1, no usage), each saying what to do.
@Suite("The log in PostgreSQL: serve's options", .timeLimit(.minutes(5)), .tier(.fast))
struct LogPostgresOptionsTests {
    static func scratch() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("log-pg-options-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test(
        "a wrong combination is a usage error naming the option",
        arguments: [
            (["--relay-name", "r1"], "Error: --relay-name names a stream of the log in PostgreSQL: give --log-postgres-url too\n"),
            (["--log-postgres-url", "postgres://u@h/db", "--lease-seconds", "1"], "Error: --lease-seconds must be from 2 to 3600\n"),
            (
                ["--log-postgres-url", "postgres://u@h/db", "--relay-name", "a b"],
                "Error: --relay-name a b: use 1 to 96 letters, digits, '-' or '_'\n"
            ),
            (
                ["--log-postgres-url", "postgres://u@h/db", "--archive-dir", "/tmp/archive-unused"],
                "Error: --archive-dir copies segment files, and the log in PostgreSQL (--log-postgres-url) has none: keep its spans longer with --retain instead\n"
            ),
        ])
    func usageErrors(arguments: [String], message: String) async throws {
        let run = try await RelayBinary.run(try RelayBinary.path(), ["serve", "--data-dir", try Self.scratch()] + arguments)
        #expect(run.status == 64, "\(arguments): \(run.status) \(run.stderr)")
        #expect(run.stderr.hasPrefix(message), "\(run.stderr)")
        #expect(run.stderr.contains("serve"), "the usage shown is serve's: \(run.stderr)")
    }

    @Test("a URL that is not one, or no database answering: exit 1 with what to do, no usage")
    func runtimeErrors() async throws {
        let binary = try RelayBinary.path()
        let scheme = try await RelayBinary.run(binary, ["serve", "--data-dir", try Self.scratch(), "--log-postgres-url", "ftp://x"])
        #expect(scheme.status == 1, "\(scheme.status) \(scheme.stderr)")
        #expect(scheme.stderr.hasPrefix("Error: --log-postgres-url: the scheme is ftp, not postgres;"), "\(scheme.stderr)")
        #expect(!scheme.stderr.contains("USAGE:") && !scheme.stderr.contains("Usage:"), "\(scheme.stderr)")
        // Port 1 on loopback: refused at once. The relay stops before it listens.
        let refused = try await RelayBinary.run(
            binary,
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", try Self.scratch(), "--relay-name", "r1", "--log-postgres-url",
                "postgres://u@127.0.0.1:1/db?sslmode=disable",
            ])
        #expect(refused.status == 1, "\(refused.status) \(refused.stderr)")
        #expect(
            refused.stderr.contains(
                "Error: the log in PostgreSQL cannot be opened: opening stream r1: PostgreSQL: cannot connect to a server at postgres://u@127.0.0.1:1/db?sslmode=disable: 127.0.0.1:1:"
            ), "\(refused.stderr)")
        #expect(refused.stderr.contains("check --log-postgres-url (user, hosts, database) and that a writable primary answers"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("listening"), "\(refused.stderr)")
    }
}

import TestTiers
import Testing

@testable import RelayPostgres

/// The log database's URL in libpq's multi-host form (`--log-postgres-url`), and how many copies
/// `synchronous_standby_names` makes a commit wait for: pure parsing, no database.
@Suite("PostgreSQL log URLs and synchronous standbys", .tier(.fast))
struct PostgresLocationHostsTests {
    @Test("two hosts: both configurations in the URL's order, the second on the default port 5432, a writable primary required")
    func twoHostsInOrder() throws {
        let location = try PostgresLocation(url: "postgres://u@h1:5433,h2/db?target_session_attrs=read-write", option: "--log-postgres-url")
        #expect(location.hostConfigurations.map(\.host) == ["h1", "h2"])
        #expect(location.hostConfigurations.map(\.port) == [5433, 5432])
        #expect(location.hostConfigurations.map(\.username) == ["u", "u"])
        #expect(location.hostConfigurations.map(\.database) == ["db", "db"])
        // The single-host configuration the fleet's code uses is the first host's.
        #expect(location.connectionConfiguration.host == "h1")
        #expect(location.connectionConfiguration.port == 5433)
        #expect(location.requiresWritable)
    }

    /// Whether a standby is passed over: libpq's default is `any` for one host; with several, the
    /// relay wants the writable primary unless told `any`.
    @Test(
        "target_session_attrs: one host takes any server unless read-write is asked; several hosts want the primary unless any is asked",
        arguments: [
            ("postgres://u@h1/db", false),
            ("postgres://u@h1/db?target_session_attrs=read-write", true),
            ("postgres://u@h1/db?target_session_attrs=primary", true),
            ("postgres://u@h1/db?target_session_attrs=any", false),
            ("postgres://u@h1,h2/db", true),
            ("postgres://u@h1,h2/db?target_session_attrs=any", false),
            ("postgres://u@h1:5433,h2:5434/db?sslmode=disable&target_session_attrs=any", false),
        ])
    func writableRequirement(url: String, requiresWritable: Bool) throws {
        let location = try PostgresLocation(url: url, option: "--log-postgres-url")
        #expect(location.requiresWritable == requiresWritable, "\(url)")
    }

    @Test("an IPv6 host in brackets, with and without a port, beside a named host")
    func bracketedIPv6() throws {
        let location = try PostgresLocation(url: "postgres://u@[::1]:5433,[fd00::2],h3:6000/db", option: "--log-postgres-url")
        #expect(location.hostConfigurations.map(\.host) == ["::1", "fd00::2", "h3"])
        #expect(location.hostConfigurations.map(\.port) == [5433, 5432, 6000])
        #expect(location.description == "postgres://u@[::1]:5433,[fd00::2]:5432,h3:6000/db")
    }

    @Test("a target_session_attrs the relay does not know is refused, the option named first and the parameter named")
    func unknownSessionAttributes() throws {
        let error = try #require(throws: PostgresLocation.Invalid.self) {
            try PostgresLocation(url: "postgres://u@h1,h2/db?target_session_attrs=standby", option: "--log-postgres-url")
        }
        #expect(error.description.hasPrefix("--log-postgres-url: target_session_attrs standby is not one of read-write, primary, any"))
    }

    @Test(
        "a bad port in the second host is refused, naming the port and the option",
        arguments: ["postgres://u@h1:5433,h2:99999/db", "postgres://u@h1,h2:0/db", "postgres://u@h1,h2:x/db", "postgres://u@h1,h2:/db"])
    func badPortOfSecondHost(url: String) throws {
        let error = try #require(throws: PostgresLocation.Invalid.self) { try PostgresLocation(url: url, option: "--log-postgres-url") }
        #expect(error.description.hasPrefix("--log-postgres-url: the port is not a number from 1 to 65535"), "\(url)")
    }

    @Test("an empty host between commas is refused")
    func emptyHost() throws {
        let error = try #require(throws: PostgresLocation.Invalid.self) {
            try PostgresLocation(url: "postgres://u@h1,,h2/db", option: "--log-postgres-url")
        }
        #expect(error.description.hasPrefix("--log-postgres-url: the host is empty"))
    }

    @Test("the description lists every host with its port and hides the password")
    func descriptionWithoutPassword() throws {
        let location = try PostgresLocation(
            url: "postgres://relay:s3cr%40t@h1:5433,h2/db?target_session_attrs=read-write", option: "--log-postgres-url")
        #expect(location.description == "postgres://relay:***@h1:5433,h2:5432/db?target_session_attrs=read-write")
        #expect(!location.description.contains("s3cr"))
        // The password is decoded for the server, on every host.
        #expect(location.hostConfigurations.map(\.password) == ["s3cr@t", "s3cr@t"])
    }

    @Test("the option given starts every refusal (the fleet's --postgres-url by default)")
    func optionNamedInErrors() throws {
        let named = try #require(throws: PostgresLocation.Invalid.self) {
            try PostgresLocation(url: "mysql://u@h1/db", option: "--log-postgres-url")
        }
        #expect(named.description.hasPrefix("--log-postgres-url: the scheme is mysql, not postgres"))
        let unnamed = try #require(throws: PostgresLocation.Invalid.self) { try PostgresLocation(url: "postgres://u@h1/db?target_session_attrs=x") }
        #expect(unnamed.description.hasPrefix("--postgres-url: target_session_attrs x is not one of"))
    }

    /// A commit waits for this many standbys (PostgreSQL's `synchronous_standby_names` grammar):
    /// a plain list waits for its first, `N (…)` and `FIRST N (…)` for N by priority, `ANY N (…)`
    /// for N of a quorum; the keywords in any case.
    @Test(
        "the standbys a commit waits for, from synchronous_standby_names",
        arguments: [
            ("", 0), ("   ", 0), ("standby1", 1), ("a, b", 1), ("*", 1), ("2 (a, b, c)", 2), ("FIRST 2 (a,b)", 2), ("ANY 1 (a, b)", 1),
            ("any 3 (a,b,c)", 3), ("first 1 (a)", 1), ("  ANY 2(a, b)", 2), ("\"first\", b", 1), ("2abc", 1),
        ])
    func requiredStandbys(names: String, count: Int) {
        #expect(LogDurability.requiredStandbys(names) == count, "synchronous_standby_names = '\(names)'")
    }
}

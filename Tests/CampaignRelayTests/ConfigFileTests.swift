import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

@testable import CampaignRelay

/// `--config FILE` and `config check`, with the real binary: every kind of option from a file,
/// flags and environment variables over it, and mistakes refused with their line.
@Suite("Configuration files", .timeLimit(.minutes(10)), .tier(.fast))
struct ConfigFileTests {
    /// How long a command may run before it counts as hung: a guard, not a pace. `config check`
    /// runs every value through the parsers of each command taking it (about 1 s of CPU in a debug
    /// build); beside a CPU burner and a whole tier of suites one took more than 30 s.
    static let hangGuard = 120.0

    /// Writes `text` to a new file and returns its path.
    static func file(_ text: String, in directory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = "\(directory)/relay-\(UUID().uuidString).toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `config check --json`'s options by key.
    static func effective(_ binary: String, _ path: String, command: String = "serve", environment: [String: String] = [:]) async throws
        -> [String: [String: Any]]
    {
        let run = try await BoundedRun.run(
            "/usr/bin/env", environment.map { "\($0.key)=\($0.value)" } + [binary, "config", "check", path, "--command", command, "--json"],
            seconds: Self.hangGuard)
        #expect(run.ending == .exited(0), "\(run.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let options = report?["options"] as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: options.compactMap { option in (option["key"] as? String).map { ($0, option) } })
    }

    @Test("every kind of option from a file: string, integer, float, flag, list; top level and [serve]; serve runs with them")
    func everyKind() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("config-kinds")
        defer { removeTree(directory) }
        let path = try Self.file(
            """
            # shared by every command
            data-dir = "\(directory)/data"
            log-level = "info"

            [serve]
            bind = "127.0.0.1:0"
            max-batch-events = 2
            idle-timeout = 12.5
            no-aggregates = true
            integration-key = ["key-a", "key-b"]

            [upload]
            concurrency = 3
            """, in: directory)
        let serve = try await Self.effective(binary, path)
        #expect(serve["data-dir"]?["value"] as? String == "\"\(directory)/data\"" && serve["data-dir"]?["line"] as? Int == 2)
        #expect(serve["bind"]?["value"] as? String == "\"127.0.0.1:0\"" && serve["bind"]?["line"] as? Int == 6)
        #expect(serve["max-batch-events"]?["value"] as? String == "2" && serve["max-batch-events"]?["source"] as? String == "file")
        #expect(serve["idle-timeout"]?["value"] as? String == "12.5")
        #expect(serve["no-aggregates"]?["value"] as? String == "true" && serve["no-aggregates"]?["line"] as? Int == 9)
        #expect(serve["integration-key"]?["value"] as? String == #"["key-a", "key-b"]"#)
        #expect(serve["concurrency"]?["source"] as? String == "default", "[upload] is upload's alone")
        #expect(serve["max-unsynced"]?["value"] as? String == "4096" && serve["max-unsynced"]?["source"] as? String == "default")
        let upload = try await Self.effective(binary, path, command: "upload")
        #expect(upload["concurrency"]?["value"] as? String == "3" && upload["data-dir"]?["source"] as? String == "file")
        #expect(upload["bind"] == nil, "upload has no --bind: the [serve] key is not its")

        // The server really runs with them.
        let server = try ChildProcess(binary, ["serve", "--config", path])
        defer { server.stopWithoutWaiting() }
        let port = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let url = "http://127.0.0.1:\(port)"
        let http = TestHTTPClient()
        let known = #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","integrationKey":"key-b"}"#
        let unknown = #"{"kind":"track","action":"open","messageId":"2","deliveryId":"d","integrationKey":"key-c"}"#
        #expect(try await http.post(url + "/v1/events", "[\(known)]").status == 200)
        let refusedKey = try await http.post(url + "/v1/events", "[\(unknown)]")
        #expect(refusedKey.status == 400 && refusedKey.body.contains("key-c"), "integration-key from the file: \(refusedKey.body)")
        let tooMany = try await http.post(url + "/v1/events", "[\(known),\(known),\(known)]")
        #expect(
            tooMany.status == 400 && tooMany.body.contains("3 events in one request; at most 2"),
            "max-batch-events = 2 from the file: \(tooMany.status) \(tooMany.body)")
        await http.shutdown()
        #expect(FileManager.default.fileExists(atPath: "\(directory)/data/wal"), "data-dir from the file")
        #expect(server.text.contains(" info "), "log-level info from the file: \(server.text.prefix(500))")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/data/aggregates.sqlite"), "no-aggregates from the file")
    }

    @Test("flags win over the file, environment variables win over the file, flags win over environment variables")
    func precedence() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("config-precedence")
        defer { removeTree(directory) }
        let path = try Self.file(
            """
            data-dir = "\(directory)/data"
            tracking-host = "http://file.example:1"
            [serve]
            bind = "127.0.0.1:1"
            admin-token = "token-from-the-file-0123"
            integration-key = ["from-file"]
            """, in: directory)
        let fromEnvironment = try await Self.effective(
            binary, path, environment: ["CAMPAIGN_RELAY_TRACKING_HOST": "http://environment.example:2", "CAMPAIGN_RELAY_ADMIN_TOKEN": "x"])
        #expect(fromEnvironment["tracking-host"]?["value"] as? String == "\"http://environment.example:2\"")
        #expect(fromEnvironment["tracking-host"]?["variable"] as? String == "CAMPAIGN_RELAY_TRACKING_HOST")
        #expect(
            fromEnvironment["admin-token"]?["value"] as? String == "(hidden)" && fromEnvironment["admin-token"]?["source"] as? String == "environment"
        )
        let fromFile = try await Self.effective(binary, path)
        #expect(fromFile["admin-token"]?["value"] as? String == "(hidden)" && fromFile["admin-token"]?["source"] as? String == "file")

        // serve itself: the flag's port and key are used, not the file's (port 1 would be refused).
        let server = try ChildProcess(binary, ["serve", "--config", path, "--bind", "127.0.0.1:0", "--integration-key", "from-flag"])
        defer { server.stopWithoutWaiting() }
        let port = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let http = TestHTTPClient()
        let event = { (key: String) in #"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d","integrationKey":"\#(key)"}]"# }
        #expect(try await http.post("http://127.0.0.1:\(port)/v1/events", event("from-flag")).status == 200)
        #expect(
            try await http.post("http://127.0.0.1:\(port)/v1/events", event("from-file")).status == 400,
            "a list on the command line replaces the file's")
        // The file's admin token is in force (no flag or variable gave one): the admin API asks for it.
        #expect(try await http.get("http://127.0.0.1:\(port)/v1/deliveries").status == 401)
        let authorized = try await http.get(
            "http://127.0.0.1:\(port)/v1/deliveries", headers: [("Authorization", "Bearer token-from-the-file-0123")])
        #expect(authorized.status == 200)

        // And with CAMPAIGN_RELAY_ADMIN_TOKEN set, the variable's token is in force, not the file's.
        let withVariable = try ChildProcess(
            binary, ["serve", "--config", path, "--bind", "127.0.0.1:0", "--data-dir", "\(directory)/data-2"],
            environment: ["CAMPAIGN_RELAY_ADMIN_TOKEN": "token-from-the-variable-0123"])
        defer { withVariable.stopWithoutWaiting() }
        let otherPort = try await withVariable.await(#"address=127\.0\.0\.1:(\d+)"#)
        let deliveries = "http://127.0.0.1:\(otherPort)/v1/deliveries"
        #expect(try await http.get(deliveries, headers: [("Authorization", "Bearer token-from-the-variable-0123")]).status == 200)
        #expect(try await http.get(deliveries, headers: [("Authorization", "Bearer token-from-the-file-0123")]).status == 401)
        await http.shutdown()
    }

    @Test(
        "mistakes are refused with the file, the line and the key: unknown keys (top level and in a table), unknown tables, wrong types, not TOML, a command without --config, tenants' tables",
        arguments: [
            ("bind = \"127.0.0.1:0\"\nbnd = \"x\"\n", ":2: unknown key bnd: did you mean bind?"),
            ("[serve]\nbind = \"127.0.0.1:0\"\nmax-batch-event = 3\n", ":3: unknown key max-batch-event in [serve]: did you mean max-batch-events?"),
            ("[upload]\nbind = \"127.0.0.1:0\"\n", ":2: unknown key bind in [upload]"),
            ("[serv]\nbind = 3\n", ":1: unknown table [serv]"),
            ("[serve]\nno-aggregates = \"yes\"\n", ":2: no-aggregates is a flag: write true or false"),
            ("[serve]\nbind = true\n", ":2: bind takes a value (a string or a number); it is not a flag"),
            ("[serve]\nbind = [\"a\", \"b\"]\n", ":2: bind takes one value, not a list"),
            ("bind = \n", ":1:8: not valid TOML"),
            // Tenants ([tenant.NAME]).
            (
                "tracking-host = \"https://t.example\"\n[tenant.brand-a]\nmarketing-host = \"https://m.example\"\n",
                ":2: [tenant.brand-a] has no tracking-host, but serve forwards the default tenant's tracking hits (tracking-host): give the tenant its own, or its hits would never be sent\n"
            ),
            (
                "[tenant.Brand_A]\ntracking-host = \"https://t.example\"\n",
                ":1: [tenant.Brand_A]: the name \"Brand_A\" may hold only lowercase letters a-z, digits and '-'\n"
            ),
            (
                "[tenant.a]\nadmin-token = \"a-token-0123456789\"\n[tenant.a]\nadmin-token = \"b-token-0123456789\"\n",
                ":3:1: not valid TOML: Error while parsing table header: cannot redefine existing table 'tenant.a'"
            ),
            (
                "[tenant.brand-a]\ntraking-host = \"https://t.example\"\n",
                ":2: traking-host of [tenant.brand-a]: a tenant takes admin-token, ca-file, integration-key, marketing-host, max-rate, max-wal-bytes, tracking-host; did you mean tracking-host?\n"
            ),
            (
                "[tenant.brand-a]\nadmin-token = \"shared-token-0123456789\"\n\n[tenant.brand-b]\nadmin-token = \"shared-token-0123456789\"\n",
                ":5: admin-token of [tenant.brand-b] is also [tenant.brand-a]'s: each tenant needs its own token\n"
            ),
            (
                "upstream-relay = \"http://127.0.0.1:9\"\n[serve]\nupstream-token = \"relay-token-0123456789\"\n[tenant.brand-a]\ntracking-host = \"https://t.example\"\n",
                ":5: tracking-host of [tenant.brand-a]: this relay hands every event to its upstream-relay, which forwards each tenant to that tenant's hosts: declare the hosts (and their ca-file and max-rate) there, not here\n"
            ),
            (
                "max-wal-bytes = 1000000\n[tenant.brand-a]\ntracking-host = \"https://t.example\"\nmax-wal-bytes = 2000000\n",
                ":4: max-wal-bytes of [tenant.brand-a] is 2000000, above the relay's max-wal-bytes 1000000, which limits every tenant together: give the tenant a smaller share\n"
            ),
            (
                "[tenant.brand-a]\nmax-wal-bytes = 2000000\n",
                ":2: max-wal-bytes of [tenant.brand-a] limits what its hosts have not taken, and it has no tracking-host or marketing-host: give it hosts, or leave the share out\n"
            ),
        ])
    func mistakes(text: String, message: String) async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("config-mistakes")
        defer { removeTree(directory) }
        let path = try Self.file(text, in: directory)
        for arguments in [["config", "check", path], ["serve", "--config", path, "--data-dir", "\(directory)/data"]] {
            let run = try await BoundedRun.run(binary, arguments, seconds: Self.hangGuard)
            #expect(run.ending == .exited(1), "\(arguments): \(run.ending) \(run.stderr)")
            #expect(run.stderr.hasPrefix("Error: \(path)\(message)"), "\(arguments): \(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/data"), "serve stopped before touching anything")
    }

    @Test(
        "values the commands refuse are refused by config check too, with the line, what is wrong and what is expected; serve names the file's line (exit 1, not a usage error)",
        arguments: [
            ("bind = 8080\n", ":1: bind = 8080: --bind 8080 is not host:port, such as 127.0.0.1:8080, 0.0.0.0:8080 or [::1]:8080"),
            (
                "concurrency = \"eight\"\n",
                ":1: concurrency = \"eight\": serve's --concurrency takes <n> (requests in flight at once to each host)"
            ),
            (
                "bind = \"localhost\"\n",
                ":1: bind = \"localhost\": --bind localhost is not host:port, such as 127.0.0.1:8080, 0.0.0.0:8080 or [::1]:8080"
            ),
            (
                "bind = \"127.0.0.1:99999\"\n",
                ":1: bind = \"127.0.0.1:99999\": --bind 127.0.0.1:99999: the port must be a number from 0 to 65535 (0: any free port)"
            ),
            ("retain = \"a day\"\n", ":1: retain = \"a day\": --retain must be a duration such as 36h, 7d or 90m, or 0 (got a day)"),
            (
                "tracking-host = \"ht!tp://::nonsense\"\n",
                ":1: tracking-host = \"ht!tp://::nonsense\": --tracking-host ht!tp://::nonsense: scheme ht!tp is not https or http"
            ),
            (
                "[serve]\nmax-batch-events = 0\n",
                ":2: max-batch-events of [serve] = 0: --max-body-bytes must be at least 1024 and --max-batch-events at least 1"
            ),
        ])
    func refusedValues(text: String, message: String) async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("config-values")
        defer { removeTree(directory) }
        let path = try Self.file(text, in: directory)
        let check = try await BoundedRun.run(binary, ["config", "check", path], seconds: Self.hangGuard)
        #expect(check.ending == .exited(1), "\(check.ending) \(check.stderr)")
        #expect(check.stderr == "Error: \(path) is not valid: 1 value the commands refuse:\n\(path)\(message)\n", "\(check.stderr)")
        let serve = try await BoundedRun.run(binary, ["serve", "--config", path, "--data-dir", "\(directory)/data"], seconds: Self.hangGuard)
        #expect(serve.ending == .exited(1), "\(serve.ending) \(serve.stderr)")
        #expect(serve.stderr == "Error: \(path)\(message) (campaign-relay config check \(path) lists every such value)\n", "\(serve.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/data"), "serve stopped before touching anything")
    }

    @Test("config check reports every refused value of a file, in the file's order, each once")
    func everyRefusedValue() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("config-values")
        defer { removeTree(directory) }
        let path = try Self.file(
            "data-dir = \"\(directory)/data\"\nbind = \"localhost\"\nconcurrency = \"eight\"\n[serve]\nretain = \"a day\"\n[upload]\nmax-attempts = 0\n",
            in: directory)
        let check = try await BoundedRun.run(binary, ["config", "check", path], seconds: Self.hangGuard)
        #expect(check.ending == .exited(1), "\(check.ending) \(check.stderr)")
        #expect(
            check.stderr == """
                Error: \(path) is not valid: 4 values the commands refuse:
                \(path):2: bind = "localhost": --bind localhost is not host:port, such as 127.0.0.1:8080, 0.0.0.0:8080 or [::1]:8080
                \(path):3: concurrency = "eight": serve's --concurrency takes <n> (requests in flight at once to each host)
                \(path):5: retain of [serve] = "a day": --retain must be a duration such as 36h, 7d or 90m, or 0 (got a day)
                \(path):7: max-attempts of [upload] = 0: --max-attempts must be at least 1

                """, "\(check.stderr)")
    }

    @Test("an inverted pair of flags is one setting: config check shows preallocate once, from either key; the docs do not repeat its text")
    func invertedPair() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("config-pair")
        defer { removeTree(directory) }
        let unset = try await Self.effective(binary, try Self.file("", in: directory))
        #expect(unset["no-preallocate"] == nil && unset["preallocate"]?["value"] as? String == "true", "\(unset["preallocate"] ?? [:])")
        let off = try await Self.effective(binary, try Self.file("log-level = \"info\"\nno-preallocate = true\n", in: directory))
        #expect(off["no-preallocate"] == nil)
        #expect(off["preallocate"]?["value"] as? String == "false" && off["preallocate"]?["line"] as? Int == 2, "\(off["preallocate"] ?? [:])")
        let text = try await BoundedRun.run(binary, ["config", "check", try Self.file("", in: directory)], seconds: Self.hangGuard)
        #expect(text.stdout.split(separator: "\n").filter { $0.contains("preallocate") }.count == 1, "\(text.stdout)")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let docs = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8).split(separator: "\n")
        let describe = { (key: String) in docs.first { $0.hasPrefix("| `\(key)` |") }?.split(separator: "|").last.map(String.init) ?? "" }
        #expect(!describe("preallocate").isEmpty && describe("preallocate") != describe("no-preallocate"), "\(describe("no-preallocate"))")
    }

    @Test("--config on a command that does not take it, and a missing file: exit 1 saying so")
    func wrongPlaces() async throws {
        let binary = try RelayBinary.path()
        let emulate = try await BoundedRun.run(binary, ["emulate", "--config", "/nonexistent.toml"], seconds: Self.hangGuard)
        #expect(emulate.ending == .exited(1), "\(emulate.stderr)")
        #expect(
            emulate.stderr
                == "Error: --config is read by aggregate, ingest, replay, serve, stats, upload, erase, wal verify, wal dump, wal archive, wal rekey, deadletter list, deadletter retry: emulate does not take it: give its options on the command line\n",
            "\(emulate.stderr)")
        let wal = try await BoundedRun.run(binary, ["wal", "verify", "--config", "/nonexistent.toml"], seconds: Self.hangGuard)
        #expect(wal.ending == .exited(1) && wal.stderr == "Error: no configuration file at /nonexistent.toml\n", "wal verify reads it: \(wal.stderr)")
        let before = try await BoundedRun.run(binary, ["wal", "--config", "/nonexistent.toml", "verify"], seconds: Self.hangGuard)
        #expect(
            before.ending == .exited(1)
                && before.stderr
                    == "Error: --config of wal goes after its subcommand's name (verify, dump, archive, rekey), as in campaign-relay wal verify --config /nonexistent.toml\n",
            "\(before.stderr)")
        let missing = try await BoundedRun.run(binary, ["serve", "--config", "/nonexistent.toml"], seconds: Self.hangGuard)
        #expect(missing.ending == .exited(1) && missing.stderr == "Error: no configuration file at /nonexistent.toml\n", "\(missing.stderr)")
    }

    @Test("docs/configuration.md documents every key of every command that takes --config, and no other")
    func everyKeyDocumented() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let documented = Set(text.matches(of: /^\| `([a-z0-9-]+)` \|/.anchorsMatchLineEndings()).map { String($0.output.1) })
        let keys = Set(ConfigurationFile.commands.values.flatMap { CommandOptionCatalog($0).entries.keys })
        #expect(keys.count > 40, "\(keys.sorted())")
        #expect(
            documented == keys,
            "undocumented: \(keys.subtracting(documented).sorted()); documented but gone: \(documented.subtracting(keys).sorted())")
    }

    @Test("the options an environment variable backs are exactly those whose CAMPAIGN_RELAY_ variable the sources read")
    func environmentBackedOptions() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources/CampaignRelay")
        var read: Set<String> = []
        let files = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /environment\("CAMPAIGN_RELAY_([A-Z_]+)"\)/) {
                read.insert(match.output.1.lowercased().replacingOccurrences(of: "_", with: "-"))
            }
        }
        #expect(read.count >= 12, "\(read.sorted())")
        let backed = ConfigurationFile.environmentBacked
        #expect(read == backed, "ConfigurationFile.environmentBacked must list what the sources read: \(read.symmetricDifference(backed).sorted())")
    }
}

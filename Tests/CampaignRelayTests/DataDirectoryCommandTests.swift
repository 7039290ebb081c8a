import Foundation
import RelayCore
import RelayEventJSON
import RelayForwarding
import RelayLog
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

@testable import CampaignRelay

/// What a new operator meets in the second hour (issue #38), on the real binary: `erase`, `wal …`
/// and `deadletter …` from the relay's configuration file, what `erase` says without the admin
/// token, its dry run, the missing data directory, `help wal`, dead letters per tenant, a misspelt
/// command, counts and rates in summaries.
@Suite("Commands working on the data directory", .timeLimit(.minutes(10)), .tier(.fast))
struct DataDirectoryCommandTests {
    static let token = "second-hour-admin-token-0123"

    /// Writes `text` to `<directory>/relay.toml` and returns its path.
    static func configFile(_ text: String, in directory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = "\(directory)/relay.toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Adds dead letters to the store of `dataDirectory`, one per `(sequence, event JSON)`.
    static func deadLetters(_ letters: [(UInt64, String)], dataDirectory: String, keyFile: String? = nil) async throws {
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let keys = try keyFile.map { try LogKeyFile.load(path: $0) }
        let store = try await ForwardingStore(dataDirectory: dataDirectory, keys: keys)
        for (sequence, json) in letters {
            let event = try EventDecoder.decode(json, defaultTime: EventTime.now())
            try await store.deadLetter(
                sequence: sequence, event: event, url: "https://campaign.example/r/?id=h1,d1,1", status: 400, body: "refused",
                reason: "refused by the host")
        }
    }

    /// Each row of a `TextTable` (two spaces or more between cells), the header first, without
    /// the rule under it.
    static func rows(_ table: String) -> [[String]] {
        table.split(separator: "\n").filter { !$0.allSatisfy { $0 == "-" || $0 == " " } }.map {
            $0.split(separator: #/  +/#).map { String($0).trimmingCharacters(in: .whitespaces) }
        }
    }

    @Test(
        "a config file alone gives erase, wal verify, wal dump and deadletter list their data directory, key file and admin token (top level and [serve]); flags win"
    )
    func configFileAlone() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("second-hour-config")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let keys = try PersonalDataAtRestTests.keyFile(in: "\(directory)/relay")
        let data = "\(directory)/data"
        let config = try Self.configFile(
            """
            data-dir = "\(data)"
            encryption-key-file = "\(keys)"

            [serve]
            bind = "127.0.0.1:0"
            admin-token = "\(Self.token)"
            """, in: directory)
        let input = Data((ErasureCommandTests.events.joined(separator: "\n") + "\n").utf8)
        let ingested = try await RelayBinary.run(binary, ["ingest", "--config", config, "-"], input: input)
        #expect(ingested.status == 0, "\(ingested.stderr)")
        try await Self.deadLetters([(2, ErasureCommandTests.events[1])], dataDirectory: data, keyFile: keys)

        let verified = try await RelayBinary.run(binary, ["wal", "verify", "--config", config])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.contains("events:            6\n"), "the file's data directory: \(verified.stdout)")
        #expect(verified.stdout.contains("encrypted frames:  ") && !verified.stdout.contains("not opened"), "the file's key: \(verified.stdout)")
        #expect(verified.stdout.hasSuffix("log is clean\n"))

        let dumped = try await RelayBinary.run(binary, ["wal", "dump", "--config", config])
        #expect(dumped.status == 0, "\(dumped.stderr)")
        #expect(dumped.stdout.split(separator: "\n").count == 6, "\(dumped.stdout)")

        let listed = try await RelayBinary.run(binary, ["deadletter", "list", "--config", config])
        #expect(listed.status == 0, "\(listed.stderr)")
        let rows = Self.rows(listed.stdout)
        #expect(rows.count == 2 && rows.last?.prefix(4) == ["1", "2", "default", "400"], "the file's store, opened with its key: \(listed.stdout)")

        // A flag wins over the file.
        let elsewhere = "\(directory)/elsewhere"
        let flagged = try await RelayBinary.run(binary, ["wal", "verify", "--config", config, "--data-dir", elsewhere])
        #expect(flagged.status == 1)
        #expect(flagged.stderr.hasPrefix("Error: no data directory at \(elsewhere): "), "\(flagged.stderr)")

        // Without a server, erase opens the log with the file's data directory and key.
        let here = try await RelayBinary.run(binary, ["erase", "--config", config, "--registration-token", "pdcanarycaratoken"])
        #expect(here.status == 0, "\(here.stderr)")
        #expect(here.stdout.contains(": erased 1 registration (1 entry in the log), 0 dead letters, 0 deduplication rows; 1 not yet forwarded\n"))

        // Beside serve --config, erase hands the erasure over with the admin token of [serve].
        let server = try ChildProcess(binary, ["serve", "--config", config])
        defer { server.stopWithoutWaiting() }
        _ = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let handed = try await RelayBinary.run(binary, ["erase", "--config", config, "--user-key", "pdcanaryadauser"])
        #expect(handed.status == 0, "\(handed.stderr)")
        #expect(handed.stdout.contains(": erased 2 registrations (2 entries in the log), 0 dead letters, 0 deduplication rows"), "\(handed.stdout)")
        let besideServer = try await RelayBinary.run(binary, ["wal", "verify", "--config", config])
        #expect(besideServer.status == 0 && besideServer.stdout.hasSuffix("log is clean\n"), "\(besideServer.stdout) \(besideServer.stderr)")
        await server.stop()
    }

    @Test("erase beside a server without its admin token says what erase takes, not what serve takes; a wrong token too")
    func eraseWithoutToken() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("second-hour-token")
        defer { removeTree(directory) }
        let server = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--admin-token", Self.token])
        defer { server.stopWithoutWaiting() }
        let port = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let name = "the server (pid \(server.process.processIdentifier)) at http://127.0.0.1:\(port)"
        let how =
            "give erase the relay's admin token, the one serve runs with: --admin-token TOKEN, CAMPAIGN_RELAY_ADMIN_TOKEN, or admin-token in the file of --config (top level or [serve])"

        let none = try await RelayBinary.run(
            "/usr/bin/env", ["-u", "CAMPAIGN_RELAY_ADMIN_TOKEN", binary, "erase", "--data-dir", directory, "--user-key", "u"])
        #expect(none.status == 1)
        #expect(
            none.stderr
                == "Error: \(name) holds the data directory, so it does the erasure, and it requires its admin token; none was given: \(how)\n",
            "\(none.stderr)")
        let wrong = try await RelayBinary.run(
            binary, ["erase", "--data-dir", directory, "--user-key", "u", "--admin-token", "not-the-token-0123456789"])
        #expect(wrong.status == 1)
        #expect(wrong.stderr == "Error: \(name) refused the admin token given: it is not the one the server runs with; \(how)\n", "\(wrong.stderr)")
        let fromVariable = try await RelayBinary.run(
            "/usr/bin/env", ["CAMPAIGN_RELAY_ADMIN_TOKEN=\(Self.token)", binary, "erase", "--data-dir", directory, "--user-key", "u"])
        #expect(fromVariable.status == 0, "\(fromVariable.stderr)")
        #expect(
            fromVariable.stdout.contains(": erased 0 registrations, 0 dead letters, 0 deduplication rows; 0 not yet forwarded\n"),
            "\(fromVariable.stdout)")
        await server.stop()
    }

    @Test("erase --dry-run says what it would erase and where, in English, and that it changed nothing; the erasure then says what it did")
    func dryRunWording() async throws {
        let binary = try RelayBinary.path()
        let directory = try await ErasureCommandTests.prepared("second-hour-dry")
        defer { removeTree(directory) }
        // The line after the erasure's id, time, selector kind and hash.
        func said(_ arguments: [String]) async throws -> String {
            let run = try await RelayBinary.run(binary, ["erase", "--data-dir", directory] + arguments)
            #expect(run.status == 0, "\(run.stderr)")
            let line = run.stdout.replacing(#/^e\S+ \S+ (user-key|registration-token) hash:[0-9a-f]{12}: /#, with: "")
            #expect(line != run.stdout, "\(run.stdout)")
            return line
        }
        #expect(
            try await said(["--user-key", "pdcanaryadauser", "--dry-run"])
                == "would erase 2 registrations (2 entries in the log) and 0 dead letters, with their deduplication rows and counts; 2 not yet forwarded; dry run: nothing was changed\n"
        )
        #expect(
            try await said(["--registration-token", "pdcanarycaratoken", "--dry-run"])
                == "would erase 1 registration (1 entry in the log) and 0 dead letters, with their deduplication rows and counts; 1 not yet forwarded; dry run: nothing was changed\n"
        )
        let json = try await RelayBinary.run(binary, ["erase", "--data-dir", directory, "--user-key", "pdcanaryadauser", "--dry-run", "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let rewrites = report["rewrites"] as? [[String: Any]] ?? []
        #expect(
            rewrites.count == 1 && rewrites.first?["entriesErased"] as? Int == 2 && rewrites.first?["segmentsRewritten"] as? Int == 0,
            "\(json.stdout)")
        #expect(try await ErasureCommandTests.dump(directory) == ErasureCommandTests.untouched, "a dry run changes nothing")
        #expect(
            try await said(["--registration-token", "pdcanarycaratoken"])
                == "erased 1 registration (1 entry in the log), 0 dead letters, 0 deduplication rows; 1 not yet forwarded\n")
    }

    @Test(
        "every command on the data directory says 'no data directory at …' and what to do when it is missing; the wal ones 'no log in …' when it holds none",
        arguments: [
            ["wal", "verify"], ["wal", "dump"], ["wal", "archive", "--to", "/nonexistent-archive"],
            ["wal", "rekey", "--encryption-key-file", "/nonexistent-keys"], ["deadletter", "list"], ["deadletter", "retry", "--all"],
            ["erase", "--user-key", "u"], ["erase", "--list"],
        ])
    func missingDataDirectory(command: [String]) async throws {
        let scratch = temporaryDirectory("second-hour-missing")
        defer { removeTree(scratch) }
        let missing = "\(scratch)/data"
        let run = try await RelayBinary.run(try RelayBinary.path(), command + ["--data-dir", missing])
        #expect(run.status == 1, "\(command): \(run.stderr)")
        #expect(
            run.stderr
                == "Error: no data directory at \(missing): nothing was stored there yet; give --data-dir the directory `serve` or `ingest` use, or --config with the relay's configuration file\n",
            "\(command): \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: missing), "\(command) created nothing")
        // A data directory without a log: the wal commands say so, instead of a failed opendir.
        guard command.first == "wal" else { return }
        try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: true)
        let empty = try await RelayBinary.run(try RelayBinary.path(), command + ["--data-dir", missing])
        #expect(empty.status == 1, "\(command): \(empty.stderr)")
        #expect(
            empty.stderr
                == "Error: no log in \(missing): it has no wal/ directory, so nothing was stored there yet; give --data-dir the directory `serve` or `ingest` use, or --config with the relay's configuration file\n",
            "\(command): \(empty.stderr)")
    }

    @Test("help wal says which subcommands only read and that rekey rewrites")
    func walHelp() async throws {
        let help = try await RelayBinary.run("/usr/bin/env", ["COLUMNS=80", try RelayBinary.path(), "help", "wal"])
        #expect(help.status == 0)
        let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.hasPrefix("OVERVIEW: Check, print, archive and re-encrypt the write-ahead log. "), "\(help.stdout)")
        #expect(
            text.contains(
                "verify and dump only read the log. archive copies its sealed segments into an archive directory and leaves the log as it is. rekey rewrites segments (of the log and the archives named) and the dead letters, so that all are sealed with the newest key of --encryption-key-file. Each works beside a running serve, and takes --config with the relay's configuration file."
            ), "\(help.stdout)")
        #expect(!help.stdout.contains("read-only"), "\(help.stdout)")
    }

    @Test("deadletter list shows each letter's tenant, --tenant lists one, --json names it; an undeclared tenant names the declared ones")
    func deadLettersPerTenant() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("second-hour-tenants")
        defer { removeTree(directory) }
        let data = "\(directory)/data"
        let hit = { (tenant: String?) in
            #"{"kind":"track","action":"open","messageId":"7","deliveryId":"d1""# + (tenant.map { #","tenant":"\#($0)""# } ?? "") + "}"
        }
        try await Self.deadLetters([(1, hit(nil)), (2, hit("brand-a")), (3, hit("brand-b"))], dataDirectory: data)
        let config = try Self.configFile(
            """
            data-dir = "\(data)"
            [tenant.brand-a]
            tracking-host = "https://a.example"
            [tenant.brand-b]
            tracking-host = "https://b.example"
            """, in: directory)

        let all = try await RelayBinary.run(binary, ["deadletter", "list", "--config", config])
        #expect(all.status == 0, "\(all.stderr)")
        let rows = Self.rows(all.stdout)
        #expect(rows.first?.prefix(4) == ["id", "sequence", "tenant", "status"], "\(all.stdout)")
        #expect(
            rows.dropFirst().map { Array($0.prefix(4)) } == [
                ["1", "1", "default", "400"], ["2", "2", "brand-a", "400"], ["3", "3", "brand-b", "400"],
            ])

        let one = try await RelayBinary.run(binary, ["deadletter", "list", "--config", config, "--tenant", "brand-a"])
        #expect(one.status == 0, "\(one.stderr)")
        #expect(Self.rows(one.stdout).dropFirst().map { Array($0.prefix(3)) } == [["2", "2", "brand-a"]], "\(one.stdout)")
        let defaultTenant = try await RelayBinary.run(binary, ["deadletter", "list", "--config", config, "--tenant", "default"])
        #expect(Self.rows(defaultTenant.stdout).dropFirst().map { Array($0.prefix(3)) } == [["1", "1", "default"]], "\(defaultTenant.stdout)")

        let json = try await RelayBinary.run(binary, ["deadletter", "list", "--config", config, "--tenant", "brand-b", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let letters = object["deadLetters"] as? [[String: Any]] ?? []
        #expect(letters.count == 1 && letters.first?["tenant"] as? String == "brand-b" && letters.first?["sequence"] as? Int == 3, "\(json.stdout)")

        let undeclared = try await RelayBinary.run(binary, ["deadletter", "list", "--config", config, "--tenant", "brand-c"])
        #expect(undeclared.status == 1)
        #expect(
            undeclared.stderr
                == "Error: no tenant \"brand-c\" on this relay: tenants are [tenant.NAME] tables of \(config) (it declares brand-a, brand-b); `default` names the tenant without a path prefix\n",
            "\(undeclared.stderr)")
        // Without a file there is nothing to check the name against: it only filters.
        let unchecked = try await RelayBinary.run(binary, ["deadletter", "list", "--data-dir", data, "--tenant", "brand-c"])
        #expect(unchecked.status == 0 && unchecked.stdout == "no dead letters\n", "\(unchecked.stdout) \(unchecked.stderr)")
        let malformed = try await RelayBinary.run(binary, ["deadletter", "list", "--data-dir", data, "--tenant", "Brand_C"])
        #expect(malformed.status == 64)
        #expect(
            malformed.stderr.hasPrefix(
                "Error: --tenant: \"Brand_C\" may hold only lowercase letters a-z, digits and '-'; `default` names the default tenant\n"),
            "\(malformed.stderr)")
    }

    @Test(
        "a misspelt command gets 'Did you mean', at the top and in a group, with exit 64 and the usage",
        arguments: [
            (
                ["serv"],
                "Error: campaign-relay has no command 'serv'. Did you mean 'serve'?\nUsage: campaign-relay <subcommand>\n  See 'campaign-relay --help' for more information.\n"
            ),
            (
                ["serv", "--config", "/nonexistent.toml"],
                "Error: campaign-relay has no command 'serv'. Did you mean 'serve'?\nUsage: campaign-relay <subcommand>\n  See 'campaign-relay --help' for more information.\n"
            ),
            (
                ["wal", "verfy", "--data-dir", "/nonexistent"],
                "Error: campaign-relay wal has no command 'verfy'. Did you mean 'verify'?\nUsage: campaign-relay wal <subcommand>\n  See 'campaign-relay wal --help' for more information.\n"
            ),
            (
                ["help", "serv"],
                "Error: campaign-relay has no command 'serv'. Did you mean 'serve'?\nUsage: campaign-relay <subcommand>\n  See 'campaign-relay --help' for more information.\n"
            ),
            (
                ["help", "wal", "verfy"],
                "Error: campaign-relay wal has no command 'verfy'. Did you mean 'verify'?\nUsage: campaign-relay wal <subcommand>\n  See 'campaign-relay wal --help' for more information.\n"
            ),
            (
                ["deadleter", "list"],
                "Error: campaign-relay has no command 'deadleter'. Did you mean 'deadletter'?\nUsage: campaign-relay <subcommand>\n  See 'campaign-relay --help' for more information.\n"
            ),
        ])
    func misspeltCommand(arguments: [String], message: String) async throws {
        let run = try await RelayBinary.run(try RelayBinary.path(), arguments)
        #expect(run.status == 64, "\(arguments): \(run.stderr)")
        #expect(run.stderr == message, "\(arguments): \(run.stderr)")
    }

    @Test("other usage errors keep argument-parser's words and exit 64: a word close to no command, a misspelt option")
    func otherUsageErrors() async throws {
        let binary = try RelayBinary.path()
        let unknown = try await RelayBinary.run(binary, ["frobnicate"])
        #expect(unknown.status == 64)
        #expect(
            unknown.stderr.hasPrefix("Error: Unexpected argument 'frobnicate'\n") && !unknown.stderr.contains("Did you mean"), "\(unknown.stderr)")
        let option = try await RelayBinary.run(binary, ["wal", "verify", "--archiv", "x"])
        #expect(option.status == 64)
        #expect(option.stderr.hasPrefix("Error: Unknown option '--archiv'. Did you mean '--archive'?\n"), "\(option.stderr)")
        #expect(
            SubcommandSuggestion(["wal", "dump", "--from", "serv"], root: CampaignRelayCommand.self) == nil, "a leaf command's arguments are its own")
        #expect(SubcommandSuggestion(["deadl"], root: CampaignRelayCommand.self)?.suggestion == "deadletter", "a prefix of one name")
    }

    @Test("summaries count in English and print a rate only where there is one: 1 event, 1 line, 1 transaction; no '0 events/s'")
    func countsAndRates() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("second-hour-counts")
        defer { removeTree(directory) }
        let good = #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d"}"#
        let mixed = try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", "\(directory)/a"], input: Data((good + "\n{}\n").utf8))
        #expect(mixed.status == 2)
        #expect(
            mixed.stdout.wholeMatch(
                of: /accepted 1 event \(sequence 1 to 1\), rejected 1 line, in \d+\.\d{3} s \((\d+|\d+\.\d+) events\/s, every one fdatasync'ed\)\n/)
                != nil, "\(mixed.stdout)")
        let refused = try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", "\(directory)/b"], input: Data("{}\n".utf8))
        #expect(refused.status == 2)
        #expect(
            refused.stdout.wholeMatch(of: /accepted 0 events, rejected 1 line, in \d+\.\d{3} s\n/) != nil, "no rate of nothing: \(refused.stdout)")
        let aggregated = try await RelayBinary.run(binary, ["aggregate", "--data-dir", "\(directory)/a"])
        #expect(aggregated.status == 0, "\(aggregated.stderr)")
        #expect(
            aggregated.stdout.wholeMatch(of: /aggregated 1 event \(sequences 1 to 1\) in 1 transaction, \d+\.\d{2} s \((\d+|\d+\.\d+) events\/s\)\n/)
                != nil,
            "\(aggregated.stdout)")

        #expect(RateText.events(1, seconds: 2) == "0.500 events/s", "a slow run is not 0 events/s")
        #expect(RateText.events(37, seconds: 3) == "12.3 events/s")
        #expect(RateText.events(2_000_000, seconds: 2.5) == "800000 events/s")
        #expect(RateText.events(0, seconds: 3) == nil && RateText.events(3, seconds: 0.0004) == nil)
        #expect(RateText.number(99.96) == "100" && RateText.number(0.012345) == "0.0123" && RateText.number(5) == "5.00")
        #expect(counted(UInt64(1), "sequence number") == "1 sequence number" && counted(3, "retry", "retries") == "3 retries")
    }
}

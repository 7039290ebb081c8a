import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

@testable import CampaignRelay

/// The one table of configuration keys (``ConfigurationKeys``): `docs/configuration.md`'s tables
/// are the table's, the table has a key per option and per tenant key, and `config check` shows
/// each tenant by the table's keys, byte for byte as it did when they were written by hand.
@Suite("The one table of configuration keys", .timeLimit(.minutes(5)), .tier(.fast))
struct ConfigurationKeyTableTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let documentPath = root.appendingPathComponent("docs/configuration.md").path
    /// Set to `1` to write the document's generated tables from the table instead of failing.
    static let writeVariable = "CAMPAIGN_RELAY_WRITE_DOCS"

    @Test("docs/configuration.md's tables of keys are the table's: names, scope (commands), reload and help")
    func documentationIsTheTable() throws {
        let document = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
        let expected = try #require(
            ConfigurationKeyDocumentation.regenerated(document),
            "docs/configuration.md lost a marker of \(ConfigurationKeyDocumentation.sections.map(\.name))")
        if ProcessInfo.processInfo.environment[Self.writeVariable] == "1", expected != document {
            try expected.write(toFile: Self.documentPath, atomically: true, encoding: .utf8)
            return
        }
        // Not `document == expected`: the failure names the keys and columns, not the whole text.
        let same = document == expected
        #expect(
            same,
            """
            docs/configuration.md and the table of keys differ:
            \(Self.differences(document: document, table: expected).joined(separator: "\n"))
            Write the document's tables again: \(Self.writeVariable)=1 swift test --filter ConfigurationKeyTableTests
            """)
    }

    @Test("the table has a key per option of the commands taking --config, standing for its flag, and the tenant keys, on SIGHUP")
    func everyOptionAndTenantKey() {
        let options = Set(ConfigurationFile.commands.values.flatMap { CommandOptionCatalog($0).entries.keys })
        #expect(options.count > 40)
        #expect(Set(ConfigurationKeys.options.map(\.name)) == options)
        #expect(ConfigurationKeys.options.count == options.count, "one key per option")
        for key in ConfigurationKeys.options {
            #expect(key.flag == "--\(key.name)" && !key.help.isEmpty, "\(key.name)")
        }
        #expect(ConfigurationKeys.tenantKeys.map(\.name) == TenantKey.all.map(\.name))
        for key in ConfigurationKeys.tenantKeys {
            #expect(key.flag == nil && key.scope == .tenant && key.reload == .sighup && !key.help.isEmpty, "\(key.name)")
        }
        #expect(ConfigurationKeys.options.first { $0.name == "tls-cert" }?.reload == .fileOnSIGHUP)
        #expect(ConfigurationKeys.options.first { $0.name == "bind" }?.reload == .restart)
    }

    @Test("a tenant key declared once (here, in the test): tenants are read with it, a bad value names its line, the docs list it on SIGHUP")
    func aNewTenantKeyIsOneDeclaration() throws {
        let greeting = TenantKey("greeting", help: "what the tenant says (a test's key)") { value, place, _ throws(ConfigurationFile.Failure) in
            guard let text = value.string, !text.isEmpty else { throw ConfigurationFile.Failure(description: "\(place) takes a non-empty string") }
            return TenantKey.Shown(text: text, json: .string(text))
        }
        let keys = TenantKey.all + [greeting]
        let directory = temporaryDirectory("config-new-key")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = "\(directory)/relay.toml"
        let write = { (greeting: String) in
            try "[tenant.brand-a]\ntracking-host = \"https://t.example\"\ngreeting = \"\(greeting)\"\n".write(
                toFile: path, atomically: true, encoding: .utf8)
        }
        let failure = { (keys: [TenantKey]) -> String? in
            do throws(ConfigurationFile.Failure) {
                _ = try ConfigurationFile(path: path, tenantKeys: keys)
                return nil
            } catch {
                return error.description
            }
        }

        try write("hello")
        let file = try #require(try? ConfigurationFile(path: path, tenantKeys: keys))
        #expect(file.tenants.first?.shown["greeting"] == TenantKey.Shown(text: "hello", json: .string("hello")))
        #expect(file.tenants.first?.configuration.destinations.trackingHost?.description == "https://t.example")
        #expect(
            failure(TenantKey.all)
                == "\(path):3: greeting of [tenant.brand-a]: a tenant takes admin-token, ca-file, integration-key, marketing-host, max-rate, max-wal-bytes, tracking-host",
            "without its declaration, the key is no tenant's")
        try write("")
        #expect(failure(keys) == "\(path):3: greeting of [tenant.brand-a] takes a non-empty string")
        #expect(
            ConfigurationKeyDocumentation.tenantKeysTable(keys.map(ConfigurationKeys.tenantKey))
                .hasSuffix("\n| greeting | SIGHUP | what the tenant says (a test's key) |"))
    }

    @Test("config check shows each tenant by the table's keys: text and JSON as they were written by hand")
    func tenantsShown() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("config-keys")
        defer { removeTree(directory) }
        let path = "\(directory)/relay.toml"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try """
        tracking-host = "https://tracking.example.com"
        max-wal-bytes = 5_000_000

        [tenant.brand-a]
        max-wal-bytes = 2_000_000
        tracking-host = "https://brand-a-tracking.example.com"
        marketing-host = "http://brand-a-marketing.example.com:8080/"
        integration-key = ["brand-a-ios-key", "brand-a-\\"android\\"-key"]
        admin-token = "brand-a-sees-brand-a-alone"
        ca-file = "\(path)"
        max-rate = 300

        [tenant.brand-b]
        tracking-host = ["https://brand-b-tracking.example.com", "https://brand-b-spare.example.com"]
        integration-key = []
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let text = try await BoundedRun.run(binary, ["config", "check", path], seconds: 30)
        #expect(text.ending == .exited(0), "\(text.stderr)")
        let tenants = text.stdout.range(of: "\nTenants (").map { String(text.stdout[$0.lowerBound...]) }
        #expect(
            tenants == """

                Tenants (SDK and backend paths /NAME/r/…, /NAME/nms/…, /NAME/v1/events):
                  [tenant.brand-a]  # file, line 4
                    tracking-host = https://brand-a-tracking.example.com
                    marketing-host = http://brand-a-marketing.example.com:8080
                    ca-file = \(path)
                    max-rate = 300
                    integration-key = ["brand-a-ios-key", "brand-a-\\"android\\"-key"]
                    admin-token = (hidden)
                    max-wal-bytes = 2000000
                  [tenant.brand-b]  # file, line 13
                    tracking-host = ["https://brand-b-tracking.example.com", "https://brand-b-spare.example.com"]
                    marketing-host = (unset)
                    ca-file = (unset)
                    max-rate = (unset)
                    integration-key = (unset)
                    admin-token = (unset)
                    max-wal-bytes = (unset)

                """, "\(text.stdout)")
        let json = try await BoundedRun.run(binary, ["config", "check", path, "--json"], seconds: 30)
        #expect(json.ending == .exited(0), "\(json.stderr)")
        #expect(
            json.stdout.hasSuffix(
                #"],"tenants":[{"adminToken":"(hidden)","caFile":"\#(path)","integrationKeys":["brand-a-ios-key","brand-a-\"android\"-key"],"line":4,"marketingHost":"http://brand-a-marketing.example.com:8080","maxRate":300,"maxWalBytes":2000000,"name":"brand-a","trackingHost":"https://brand-a-tracking.example.com"},{"integrationKeys":[],"line":13,"name":"brand-b","trackingHost":["https://brand-b-tracking.example.com","https://brand-b-spare.example.com"]}],"valid":true}"#
                    + "\n"), "\(json.stdout.suffix(800))")
    }

    /// What differs between the document's generated tables and the table's, row by row: a key
    /// missing or extra, or the columns of a key that differ.
    static func differences(document: String, table: String) -> [String] {
        var found: [String] = []
        for section in ConfigurationKeyDocumentation.sections {
            let (documented, header) = rows(of: section.name, in: document)
            let (declared, _) = rows(of: section.name, in: table)
            for key in declared.keys.sorted() where documented[key] == nil { found.append("\(section.name): \(key) is not documented") }
            for key in documented.keys.sorted() where declared[key] == nil { found.append("\(section.name): \(key) is documented but no key") }
            for key in declared.keys.sorted() {
                guard let old = documented[key], let new = declared[key], old != new else { continue }
                let columns = zip(old, new).enumerated().filter { $0.element.0 != $0.element.1 }.map {
                    header.indices.contains($0.offset) ? header[$0.offset] : "?"
                }
                found.append("\(section.name): \(key) differs in \(columns.isEmpty ? ["its cells"] : columns)")
            }
        }
        return found.isEmpty ? ["(the text around the tables)"] : found
    }

    /// The rows of a generated section, by key, as cells; and its header.
    private static func rows(of section: String, in document: String) -> ([String: [String]], [String]) {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let first = lines.firstIndex(of: ConfigurationKeyDocumentation.begin(section)),
            let last = lines[first...].firstIndex(of: ConfigurationKeyDocumentation.end(section))
        else { return ([:], []) }
        let cells = { (line: String) in
            line.replacingOccurrences(of: "\\|", with: "\u{1}").split(separator: "|").map {
                $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "\u{1}", with: "|")
            }
        }
        let table = lines[(first + 1)..<last].filter { $0.hasPrefix("|") && !$0.hasPrefix("|---") }
        let header = table.first.map(cells) ?? []
        var rows: [String: [String]] = [:]
        for line in table.dropFirst() {
            let row = cells(line)
            if let key = row.first { rows[key.trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = row }
        }
        return (rows, header)
    }
}

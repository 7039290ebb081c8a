import ArgumentParser
import RelayCore
import RelayEventJSON
import RelayServer

/// `campaign-relay config`: configuration files.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check a configuration file (--config) and show the configuration it gives.",
        subcommands: [ConfigCheckCommand.self]
    )
}

/// `campaign-relay config check FILE`: validates the file and prints a command's effective
/// configuration, each option with where its value comes from.
struct ConfigCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a TOML configuration file and print the effective configuration.",
        discussion: """
            Keys are long options without the dashes (bind = "0.0.0.0:8080"; flags are true or
            false; repeatable options take a list). Top-level keys apply to every command that has
            the option; a table named after a command ([serve], [upload], …) applies to that
            command only. Flags win over environment variables (CAMPAIGN_RELAY_ADMIN_TOKEN, …),
            which win over the file. The values come from this shell's environment; tokens and
            the PostgreSQL URL are shown as (hidden).

            Tenants are tables [tenant.NAME] (NAME: 1 to 63 of a-z, 0-9 and -) with
            tracking-host, marketing-host, ca-file, max-rate, integration-key, admin-token and
            max-wal-bytes; they are listed after the options. Where serve forwards the default tenant's hits or
            registrations to Campaign, each tenant needs its own host of that kind; a relay with
            upstream-relay names no tenant hosts (its central relay does).

            Every value goes through the parsers of the commands that take it, as when they start
            (bind = "localhost" is refused: serve takes host:port); each value refused is reported
            as file:line key = value: what is wrong and what is expected.

            Exit status: 0 when the file is valid, 1 with the file, line and key otherwise.
            """
    )

    @Argument(help: ArgumentHelp("The TOML file.", valueName: "file"))
    var file: String

    @Option(name: .long, help: ArgumentHelp("The command whose configuration to show.", valueName: "command"))
    var command: String = "serve"

    @Flag(name: .long, help: "Print the effective configuration as JSON.")
    var json = false

    func validate() throws {
        guard ConfigurationFile.commands[command] != nil else {
            throw ValidationError("--command must be one of \(ConfigurationFile.commands.keys.sorted().joined(separator: ", "))")
        }
    }

    /// One option of the effective configuration.
    struct Effective: Encodable {
        var key: String
        /// The value, `(hidden)` for secrets, `nil` when unset.
        var value: String?
        /// `file`, `environment` or `default` (or `unset`).
        var source: String
        /// The file's line, for a value from the file.
        var line: Int?
        /// The environment variable, for a value from the environment.
        var variable: String?
    }

    /// One tenant of the file, as `--json` prints it: its name, its line, and each key of
    /// ``TenantKey/all`` by its JSON name (secrets `(hidden)`; a key it does not set left out,
    /// unless the key says what an unset value prints).
    struct Tenant: Encodable {
        var name: String
        var line: Int
        var values: [(key: String, value: TenantKey.JSONValue)]

        /// `table` as `--json` prints it.
        init(_ table: TenantTable) {
            name = table.name.text
            line = table.line
            values = TenantKey.all.compactMap { key in (table.shown[key.name]?.json ?? key.unsetJSON).map { (key.jsonName, $0) } }
        }

        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(name, forKey: Key(stringValue: "name"))
            try container.encode(line, forKey: Key(stringValue: "line"))
            for (key, value) in values { try container.encode(value, forKey: Key(stringValue: key)) }
        }
    }

    /// What `--json` prints.
    struct Report: Encodable {
        var file: String
        var command: String
        var valid: Bool
        var options: [Effective]
        var tenants: [Tenant]
    }

    func run() async throws {
        let parsed: ConfigurationFile
        do {
            parsed = try ConfigurationFile(path: file)
        } catch {
            throw RuntimeFailure(error.description)
        }
        let environment = ConfigurationFile.currentEnvironment()
        // Every value through the parsers of the commands that take it, as they start.
        let problems = ConfigurationValueCheck.problems(in: parsed, environment: environment)
        guard problems.isEmpty else {
            throw RuntimeFailure(
                "\(file) is not valid: \(counted(problems.count, "value")) the commands refuse:\n"
                    + problems.map(\.description).joined(separator: "\n"))
        }
        let catalog = ConfigurationKeys.catalogs[command] ?? CommandOptionCatalog(ServeCommand.self)
        var options: [Effective] = []
        // The table's options (by name) that this command has, as it declares them.
        for entry in ConfigurationKeys.options.compactMap({ catalog.entries[$0.name] }) {
            // An inverted pair (--preallocate/--no-preallocate) is one setting, shown by its positive name.
            if entry.isFlag, entry.name.hasPrefix("no-"), catalog.entries[String(entry.name.dropFirst(3))]?.isFlag == true { continue }
            let inverse = entry.isFlag ? catalog.entries["no-" + entry.name] : nil
            let hidden = entry.name.hasSuffix("token") || entry.name.hasSuffix("postgres-url")
            let show = { (value: String) in hidden ? "(hidden)" : value }
            let variable = ConfigurationFile.environmentVariable(entry.name)
            if ConfigurationFile.environmentBacked.contains(entry.name), let value = environment[variable], !value.isEmpty {
                options.append(Effective(key: entry.name, value: show("\"\(value)\""), source: "environment", variable: variable))
            } else if let setting = parsed.setting(entry.name, for: command) {
                options.append(Effective(key: entry.name, value: show(setting.text), source: "file", line: setting.line))
            } else if let inverse, let setting = parsed.setting(inverse.name, for: command) {
                options.append(Effective(key: entry.name, value: setting.text == "true" ? "false" : "true", source: "file", line: setting.line))
            } else if entry.isFlag {
                // An inverted pair (--preallocate/--no-preallocate) names its default by the flag that is on.
                options.append(Effective(key: entry.name, value: entry.defaultValue == "--\(entry.name)" ? "true" : "false", source: "default"))
            } else if let value = entry.defaultValue {
                options.append(Effective(key: entry.name, value: show(value), source: "default"))
            } else {
                options.append(Effective(key: entry.name, value: nil, source: "unset"))
            }
        }
        // Tenants need the hosts of the kinds serve forwards for the default tenant.
        let effective = { (key: String) in options.first { $0.key == key }?.value != nil }
        do {
            try TenantTable.check(
                parsed.tenants, path: file, forwardsTracking: effective("tracking-host"), forwardsMarketing: effective("marketing-host"),
                handsOnToRelay: effective("upstream-relay"),
                adminToken: environment[ConfigurationFile.environmentVariable("admin-token")].flatMap { $0.isEmpty ? nil : $0 }
                    ?? parsed.settings.first { $0.key == "admin-token" && ($0.table == nil || $0.table == "serve") }?.arguments.last,
                maximumLogBytes: options.first { $0.key == "max-wal-bytes" }?.value.flatMap { Int64($0) })
        } catch {
            throw RuntimeFailure(error.description)
        }
        var output = StandardOutput.output()
        defer { output.flush() }
        if json {
            output.line(APIJSON.text(Report(file: file, command: command, valid: true, options: options, tenants: parsed.tenants.map(Tenant.init))))
            return
        }
        output.line("\(file) is valid. The configuration of `campaign-relay \(command) --config \(file)`, without other flags:")
        let width = options.map { $0.key.count + ($0.value?.count ?? 5) + 3 }.max() ?? 0
        for option in options {
            let assignment = "\(option.key) = \(option.value ?? "(unset)")"
            let origin: String
            switch option.source {
            case "file": origin = "file, line \(option.line ?? 0)"
            case "environment": origin = option.variable ?? "environment"
            default: origin = option.source
            }
            output.line("  " + assignment + String(repeating: " ", count: max(0, width - assignment.count)) + "  # " + origin)
        }
        guard !parsed.tenants.isEmpty else { return }
        output.line("")
        output.line("Tenants (SDK and backend paths /NAME/r/…, /NAME/nms/…, /NAME/v1/events):")
        for tenant in parsed.tenants {
            output.line("  [tenant.\(tenant.name.text)]  # file, line \(tenant.line)")
            for key in TenantKey.all {
                output.line("    \(key.name) = \(tenant.shown[key.name]?.text ?? "(unset)")")
            }
        }
    }
}

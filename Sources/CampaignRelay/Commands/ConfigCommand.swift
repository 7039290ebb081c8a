import ArgumentParser
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

    /// What `--json` prints.
    struct Report: Encodable {
        var file: String
        var command: String
        var valid: Bool
        var options: [Effective]
    }

    func run() async throws {
        let parsed: ConfigurationFile
        do {
            parsed = try ConfigurationFile(path: file)
        } catch {
            throw RuntimeFailure(error.description)
        }
        let environment = ConfigurationFile.currentEnvironment()
        let catalog = CommandOptionCatalog(ConfigurationFile.commands[command] ?? ServeCommand.self)
        var options: [Effective] = []
        for entry in catalog.entries.values.sorted(by: { $0.name < $1.name }) {
            let hidden = entry.name.hasSuffix("token") || entry.name == "postgres-url"
            let show = { (value: String) in hidden ? "(hidden)" : value }
            let variable = ConfigurationFile.environmentVariable(entry.name)
            if ConfigurationFile.environmentBacked.contains(entry.name), let value = environment[variable], !value.isEmpty {
                options.append(Effective(key: entry.name, value: show("\"\(value)\""), source: "environment", variable: variable))
            } else if let setting = parsed.settings.first(where: { $0.key == entry.name && $0.table == command })
                ?? parsed.settings.first(where: { $0.key == entry.name && $0.table == nil })
            {
                options.append(Effective(key: entry.name, value: show(setting.text), source: "file", line: setting.line))
            } else if entry.isFlag {
                // An inverted pair (--preallocate/--no-preallocate) names its default by the flag that is on.
                options.append(Effective(key: entry.name, value: entry.defaultValue == "--\(entry.name)" ? "true" : "false", source: "default"))
            } else if let value = entry.defaultValue {
                options.append(Effective(key: entry.name, value: show(value), source: "default"))
            } else {
                options.append(Effective(key: entry.name, value: nil, source: "unset"))
            }
        }
        var output = StandardOutput.output()
        defer { output.flush() }
        if json {
            output.line(APIJSON.text(Report(file: file, command: command, valid: true, options: options)))
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
    }
}

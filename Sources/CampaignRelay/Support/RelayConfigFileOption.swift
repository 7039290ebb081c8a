import ArgumentParser
import RelayIO

/// `--config FILE` of the commands that work on a relay's data directory beside its `serve`, or in
/// its place: `erase`, `wal verify|dump|archive|rekey` and `deadletter list|retry`.
///
/// The file is the one `serve --config` reads. These commands take from it the settings that say
/// where the relay keeps its data and how to open it or reach its server (``Command/keys``), as `serve`
/// gets them: the top level, and `[serve]` over it. They take nothing else: a file's
/// `integration-key`, `limit`, `from`, `to` or `dry-run` are other commands' settings that share a
/// name with a selector or a filter of these, and an erasure or a re-queue must never be narrowed
/// or widened by a file. As for every command, a flag wins over an environment variable, which
/// wins over the file.
///
/// Like ``ConfigurationFile``, the file becomes command-line arguments before the user's, so
/// argument-parser checks every value as it checks a flag.
struct RelayConfigFileOption: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help: ArgumentHelp(
            "The relay's TOML configuration file (the one serve --config reads): its data-dir, encryption-key-file, admin-token and the other settings of where the relay's data is (top level, then [serve]); flags and environment variables win over it.",
            valueName: "file"))
    var path: String?

    /// A command that takes this option.
    struct Command: Sendable {
        /// The words that name it (`["wal", "verify"]`).
        var words: [String]
        /// The command's type, whose options say which of ``keys`` it has.
        var type: any ParsableCommand.Type
        /// The keys of the file it takes (each one it has an option of).
        var keys: Set<String>
        /// The keys of the file it reads itself rather than as its options (`erase`'s
        /// `archive-dir`), for the docs.
        var readsItself: Set<String>

        init(_ words: [String], _ type: any ParsableCommand.Type, _ keys: Set<String>, readsItself: Set<String> = []) {
            self.words = words
            self.type = type
            // Output and logs (``CommonOptions``), as every command takes them from a file.
            self.keys = keys.union(["json", "log-level", "log-format"])
            self.readsItself = readsItself
        }
    }

    /// The commands that take this option, with the keys of the file each takes. `erase` reads
    /// `archive-dir` itself (``archiveDirectories()``): beside a running server, which erases from
    /// its own archives, it must not get them as its own `--archive-dir` (which it then refuses).
    static let commands: [Command] = [
        Command(["erase"], EraseCommand.self, ["data-dir", "encryption-key-file", "admin-token", "postgres-url"], readsItself: ["archive-dir"]),
        Command(["wal", "verify"], WALVerifyCommand.self, ["data-dir", "encryption-key-file", "log-postgres-url", "relay-name"]),
        Command(["wal", "dump"], WALDumpCommand.self, ["data-dir", "encryption-key-file", "log-postgres-url", "relay-name"]),
        Command(["wal", "archive"], WALArchiveCommand.self, ["data-dir"]),
        Command(
            ["wal", "rekey"], WALRekeyCommand.self,
            ["data-dir", "encryption-key-file", "archive-dir", "admin-token", "log-postgres-url", "relay-name"]),
        Command(["deadletter", "list"], DeadLetterListCommand.self, ["data-dir", "encryption-key-file", "log-postgres-url", "relay-name"]),
        Command(
            ["deadletter", "retry"], DeadLetterRetryCommand.self,
            ["data-dir", "encryption-key-file", "archive-dir", "retain", "retain-bytes", "log-postgres-url", "relay-name"]),
    ]

    /// The commands as a person names them: `erase, wal verify, …`.
    static var commandNames: [String] { commands.map { $0.words.joined(separator: " ") } }

    /// The table whose keys win over the top level: the file configures `serve`, and these
    /// commands work on what it serves.
    static let table = "serve"

    /// Expands `--config FILE` when the command line `arguments` (without the program name) name a
    /// command of ``commands``: the file's settings for it are placed right after the command's
    /// words. `nil` when the arguments name another command or give no `--config`, for
    /// ``ConfigurationFile/expand(_:environment:)``.
    ///
    /// - Throws: ``ConfigurationFile/Failure`` for a file that is not valid, or a `--config` given
    ///   before the subcommand's name (`wal --config F verify`), where it would be a usage error
    ///   that does not say what to do.
    static func expand(_ arguments: [String], environment: [String: String]) throws(ConfigurationFile.Failure) -> [String]? {
        guard let path = ConfigurationFile.configPath(arguments), let first = arguments.first else { return nil }
        let groups = Set(commands.filter { $0.words.count > 1 }.map { $0.words[0] })
        if groups.contains(first) {
            let subcommands = commands.filter { $0.words[0] == first }.map { $0.words[1] }
            guard arguments.count > 1, subcommands.contains(arguments[1]) else {
                throw ConfigurationFile.Failure(
                    description:
                        "--config of \(first) goes after its subcommand's name (\(subcommands.joined(separator: ", "))), as in campaign-relay \(first) \(subcommands.first ?? "") --config \(path)"
                )
            }
        }
        guard let command = commands.first(where: { $0.words == Array(arguments.prefix($0.words.count)) }) else { return nil }
        let file = try ConfigurationFile(path: path)
        let given = Array(arguments.dropFirst(command.words.count))
        return command.words + file.relaySettings(for: command.type, keys: command.keys, given: given, environment: environment) + given
    }

    /// The tenants the file declares (`[tenant.NAME]`); none without `--config`, read on an
    /// executor of its own.
    ///
    /// - Throws: ``RuntimeFailure`` naming the file, the line and the key when the file is not valid.
    func tenants() async throws -> [TenantTable] {
        guard let path else { return [] }
        return try await ConfigFileOption.tenants(path: path)
    }

    /// The archive directories `serve` copies segments into by this file (`archive-dir`, top level
    /// or `[serve]`); none without `--config`. Read on an executor of its own.
    ///
    /// - Throws: ``RuntimeFailure`` naming the file, the line and the key when the file is not valid.
    func archiveDirectories() async throws -> [String] {
        guard let path else { return [] }
        // serve's --archive-dir is one directory: the setting is ["--archive-dir", DIR].
        return try await ConfigFileOption.reading(path) { $0.relaySetting("archive-dir")?.arguments.last.map { [$0] } ?? [] }
    }
}

extension ConfigurationFile {
    /// The setting of `key` as `serve` gets it from this file: from `[serve]`, else from the top
    /// level; `nil` when the file does not set it.
    func relaySetting(_ key: String) -> Setting? {
        setting(key, for: RelayConfigFileOption.table)
    }

    /// The arguments the file adds for `command`, one of ``RelayConfigFileOption/commands``: each
    /// of `keys` the command has, as `serve` gets it, unless the user gave it (`given`) or its
    /// environment variable is set.
    func relaySettings(for command: any ParsableCommand.Type, keys: Set<String>, given: [String], environment: [String: String]) -> [String] {
        let catalog = CommandOptionCatalog(command)
        let overridden = Self.overridden(given: given, environment: environment)
        return keys.sorted().flatMap { key -> [String] in
            guard catalog.entries[key] != nil, !overridden(key) else { return [] }
            return relaySetting(key)?.arguments ?? []
        }
    }
}

/// The one table of configuration keys: every key a `--config FILE` may set, each with its name,
/// help, reading (parse and validate), scope and reload behaviour (``ConfigurationKey``).
///
/// Two kinds of keys, each declared once:
/// - **options**: a key per long option of the commands that take `--config`. The option is the
///   declaration (its name, help, parser and `validate()`); the table says which commands have it
///   and which data-directory commands take it (their declarations, ``RelayConfigFileOption``),
///   and adds what the option cannot say: its reload behaviour and, where a file needs other
///   words than the command line, its help in a file (``optionNotes``).
/// - **tenant keys**: the keys of `[tenant.NAME]`, declared whole in ``TenantKey/all``.
///
/// Read by ``ConfigurationFile`` (which keys a file may set, `serve --config`'s arguments), by
/// `config check` (the options it shows, each tenant's keys), by `serve`'s SIGHUP reload (the
/// tenant keys, ``ConfigurationKey/Reload/sighup``) and by ``ConfigurationKeyDocumentation``,
/// which writes `docs/configuration.md`'s tables of keys.
enum ConfigurationKeys {
    /// The commands that take `--config` and every key they have an option of, in the order the
    /// docs name them (``ConfigurationFile/commands`` has their types).
    static let commandNames = ["serve", "ingest", "aggregate", "stats", "upload", "replay"]

    /// The options of each command of ``commandNames``, read once from swift-argument-parser.
    static let catalogs: [String: CommandOptionCatalog] = ConfigurationFile.commands.mapValues { CommandOptionCatalog($0) }

    /// The top-level key that holds the tenants' tables; an option of that name (`stats --tenant`)
    /// is set in its command's table only.
    static let tenantTables = "tenant"

    /// What the table says of an option that its declaration does not.
    struct OptionNote: Sendable {
        /// When a running `serve` takes a new value.
        var reload: ConfigurationKey.Reload = .restart
        /// Its help in a file, where the option's own help is not the right words (several
        /// commands' helps in one; what a file must know).
        var help: String?
    }

    /// The options whose reload behaviour is not ``ConfigurationKey/Reload/restart`` or whose help
    /// in a file is not the option's own.
    static let optionNotes: [String: OptionNote] = [
        "tls-cert": OptionNote(reload: .fileOnSIGHUP),
        "tls-key": OptionNote(reload: .fileOnSIGHUP),
        "tls-client-ca": OptionNote(reload: .fileOnSIGHUP),
        "encryption-key-file": OptionNote(
            help:
                "Encrypt the log at rest (AES-256-GCM) with the newest key of this file, and read frames sealed with any of its keys: one `ID:BASE64` key per line (32 bytes, `head -c 32 /dev/urandom | base64`), newest last, mode 0600. Dead letters are sealed too. See the README's \"Personal data\"."
        ),
        "from-archive": OptionNote(
            help:
                "replay: read segments the log no longer has from this archive (--archive-dir, `wal archive`). stats: with --rebuild, read them from the archive first."
        ),
        "tenant": OptionNote(
            help:
                "Only this tenant's deliveries and registrations (`default`: the tenant without a path prefix). In a file, set it in `[stats]`: a top-level `tenant` names the tenant tables."
        ),
    ]

    /// Every key: the options by name, then the tenant keys in their order.
    static let all: [ConfigurationKey] = options + tenantKeys

    /// A key per long option of the commands that take `--config`, by name.
    static let options: [ConfigurationKey] = {
        let dataDirectoryCatalogs = RelayConfigFileOption.commands.map { CommandOptionCatalog($0.type) }
        let names = Set(catalogs.values.flatMap(\.entries.keys))
        return names.sorted().compactMap { name -> ConfigurationKey? in
            let commands = commandNames.filter { catalogs[$0]?.entries[name] != nil }
            guard let first = commands.first, let entry = catalogs[first]?.entries[name] else { return nil }
            let dataDirectoryCommands = zip(RelayConfigFileOption.commands, dataDirectoryCatalogs).filter { command, catalog in
                (command.keys.contains(name) && catalog.entries[name] != nil) || command.readsItself.contains(name)
            }.map { command, _ in command.words.joined(separator: " ") }
            let note = optionNotes[name]
            return ConfigurationKey(
                name: name, help: note?.help ?? help(of: entry, catalog: catalogs[first]),
                scope: .option(commands: commands, dataDirectoryCommands: dataDirectoryCommands, topLevel: name != tenantTables),
                reload: note?.reload ?? .restart, reading: .option(entry))
        }
    }()

    /// The keys of `[tenant.NAME]`, in ``TenantKey/all``'s order. A reload reads every tenant again
    /// and `TenantReconciler` applies each one whole, so each of its keys takes effect on SIGHUP.
    static let tenantKeys: [ConfigurationKey] = TenantKey.all.map(tenantKey)

    /// A tenant key as a key of the table.
    static func tenantKey(_ key: TenantKey) -> ConfigurationKey {
        ConfigurationKey(name: key.name, help: key.help, scope: .tenant, reload: .sighup, reading: .tenant(key))
    }

    /// An option's help in a file: its own, but for the negative of an inverted pair of flags
    /// (`no-preallocate`), which is one setting with its positive (`config check` shows that one).
    private static func help(of entry: CommandOptionCatalog.Entry, catalog: CommandOptionCatalog?) -> String {
        if entry.isFlag, entry.name.hasPrefix("no-"), let positive = catalog?.entries[String(entry.name.dropFirst(3))], positive.isFlag {
            return "The same as `\(positive.name) = false` (write the key either way; `config check` shows it as `\(positive.name)`)."
        }
        return entry.abstract ?? ""
    }
}

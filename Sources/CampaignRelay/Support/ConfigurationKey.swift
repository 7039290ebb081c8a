/// One key of a configuration file (`--config FILE`): its name, what it means, where a file may
/// write it, how its value is read and checked, and when a running `serve` takes a new value.
///
/// Every key is in ``ConfigurationKeys/all``, the one table that `config check`, `serve --config`,
/// the SIGHUP reload and `docs/configuration.md` come from.
struct ConfigurationKey: Sendable {
    /// Where a file may write the key.
    enum Scope: Sendable, Hashable {
        /// A long option of the commands that take `--config`: at the top of the file, for every
        /// command that has it, or in the `[COMMAND]` table of one of `commands` (in the order the
        /// docs name them); `topLevel` false: only in a command's table. `dataDirectoryCommands`
        /// are the commands working on the data directory that take it as `serve` gets it
        /// (``RelayConfigFileOption``), as a person names them (`wal verify`).
        case option(commands: [String], dataDirectoryCommands: [String], topLevel: Bool)
        /// A key of each `[tenant.NAME]` table.
        case tenant
    }

    /// When a running `serve` takes a new value of the key.
    enum Reload: Sendable, Hashable {
        /// At the next start: the value is read when the command starts.
        case restart
        /// On SIGHUP, without a restart (a tenant's keys: `TenantReloadService`).
        case sighup
        /// The path at the next start; the file it names is read again on SIGHUP (the TLS
        /// certificate, key and client CAs: `CertificateReloadService`).
        case fileOnSIGHUP
    }

    /// How a value is read and checked.
    enum Reading: Sendable {
        /// As the command-line option `--NAME`: the file's value becomes that flag's words, and
        /// swift-argument-parser parses and validates them with the command's own rules
        /// (``ConfigurationValueCheck``). The entry is the option as the first command of its
        /// scope declares it.
        case option(CommandOptionCatalog.Entry)
        /// By the tenant key's own reader (``TenantKey/read``).
        case tenant(TenantKey)
    }

    /// The key as a file writes it (`bind`, `max-wal-bytes`).
    var name: String
    /// What it means, as the docs say it (Markdown).
    var help: String
    /// Where a file may write it.
    var scope: Scope
    /// When `serve` takes a new value.
    var reload: Reload
    /// How a value is read and checked.
    var reading: Reading

    /// The command-line flag the key stands for (`--bind`); `nil` for a tenant's key, which has
    /// none.
    var flag: String? {
        guard case .option = reading else { return nil }
        return "--" + name
    }
}

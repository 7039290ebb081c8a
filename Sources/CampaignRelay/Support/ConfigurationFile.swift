import ArgumentParser
import Foundation
import TOMLKit

/// A TOML file of options (`--config FILE`): every key is an option's long name, as on the command
/// line (`bind = "0.0.0.0:8080"`, `max-unsynced = 4096`, `no-aggregates = true`,
/// `integration-key = ["a", "b"]`).
///
/// Top-level keys apply to every command that has such an option (`data-dir`, `tracking-host`);
/// a table named after a command (`[serve]`, `[upload]`) holds keys for that command alone. A key
/// no command knows, a key of a table its command does not have, or a table that is not a command
/// is an error naming the key and its line. Precedence: flags, then environment variables
/// (`CAMPAIGN_RELAY_ADMIN_TOKEN`, …), then the file, then the defaults.
///
/// The file becomes command-line arguments placed before the user's, so argument-parser checks
/// every value as it checks a flag; an option given on the command line (or by its environment
/// variable) is not taken from the file at all.
struct ConfigurationFile: Sendable {
    /// The commands that take `--config`, by name.
    static let commands: [String: any ParsableCommand.Type] = [
        "serve": ServeCommand.self, "ingest": IngestCommand.self, "aggregate": AggregateCommand.self, "stats": StatsCommand.self,
        "upload": UploadCommand.self, "replay": ReplayCommand.self,
    ]

    /// Options that fall back to an environment variable when no flag gives them; the variable
    /// wins over the file.
    static let environmentBacked: Set<String> = [
        "admin-token", "relay-token", "postgres-url", "log-postgres-url", "tls-cert", "tls-key", "tls-client-ca", "tracking-host", "marketing-host",
        "upstream-relay", "upstream-token", "upstream-client-cert", "upstream-client-key",
    ]

    /// This process's environment variables.
    static func currentEnvironment() -> [String: String] { ProcessInfo.processInfo.environment }

    /// Expands `--config FILE` in the command line `arguments` (without the program name): the
    /// file's settings for the command named first become arguments right after its name.
    /// Arguments without `--config` come back as they are. The file read comes back too (`nil`
    /// without `--config`), so that a value of it a command refuses can be blamed on its line.
    ///
    /// - Throws: ``Failure`` for an unusable file, or `--config` on a command that does not take it.
    static func expanding(_ arguments: [String], environment: [String: String]) throws(Failure) -> (
        arguments: [String], file: ConfigurationFile?
    ) {
        guard let path = configPath(arguments) else { return (arguments, nil) }
        guard let command = arguments.first, commands[command] != nil else {
            // The commands working on a relay's data directory take it too (RelayConfigFileOption).
            let takers = (commands.keys.sorted() + RelayConfigFileOption.commandNames).joined(separator: ", ")
            let what =
                arguments.first.flatMap { $0.hasPrefix("-") ? nil : "\($0) does not take it: give its options on the command line" }
                ?? "put the command's name first (campaign-relay serve --config \(path))"
            throw Failure(description: "--config is read by \(takers): \(what)")
        }
        let file = try ConfigurationFile(path: path)
        let rest = Array(arguments.dropFirst())
        return ([command] + file.arguments(for: command, given: rest, environment: environment) + rest, file)
    }

    /// The environment variable of an environment-backed option.
    static func environmentVariable(_ option: String) -> String {
        "CAMPAIGN_RELAY_" + option.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// A value the file sets, where it is.
    struct Setting: Sendable, Hashable {
        /// The option's long name.
        var key: String
        /// The command-line words it stands for (`["--bind", "0.0.0.0:8080"]`; a false flag: none).
        var arguments: [String]
        /// The value as the file writes it, for `config check`.
        var text: String
        /// The line it is on (1-based; 0 when it could not be found).
        var line: Int
        /// The table it is in (`serve`), or `nil` at the top level.
        var table: String?
    }

    /// What is wrong with a file: where, and what to do.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let path: String
    /// Every setting of the file, checked against the commands that could take it.
    let settings: [Setting]
    /// The file's tenants (`[tenant.NAME]`), in the file's order.
    let tenants: [TenantTable]

    /// Reads and checks the file at `path`; its tenants' tables with `tenantKeys` (the table of
    /// tenant keys; a test may add one).
    ///
    /// - Throws: ``Failure`` naming the file, the line and the key when the file cannot be read,
    ///   is not TOML, or sets something no command has.
    init(path: String, tenantKeys: [TenantKey] = TenantKey.all) throws(Failure) {
        self.path = path
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            guard FileManager.default.fileExists(atPath: path) else { throw Failure(description: "no configuration file at \(path)") }
            throw Failure(description: "cannot read the configuration file \(path) (is it UTF-8 text, and readable by this user?)")
        }
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw Failure(description: "\(path):\(error.source.begin.line):\(error.source.begin.column): not valid TOML: \(error.description)")
        } catch {
            throw Failure(description: "\(path): not valid TOML: \(error)")
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let catalogs = ConfigurationKeys.catalogs
        var settings: [Setting] = []
        var tenants: [TenantTable] = []
        // In the file's order, so the first mistake reported is the first one in the file.
        for key in table.keys.sorted(by: { Self.order($0, $1, table: nil, lines: lines) }) {
            guard let value = table[key] else { continue }
            if key == ConfigurationKeys.tenantTables {
                tenants = try TenantTable.tables(value, path: path, lines: lines, keys: tenantKeys)
            } else if let section = value.table {
                guard let catalog = catalogs[key] else {
                    let line = Self.line(ofTable: key, in: lines)
                    throw Failure(
                        description:
                            "\(path):\(line): unknown table [\(key)]: tables are named after the commands that take --config (\(Self.commands.keys.sorted().joined(separator: ", "))), or are tenants ([tenant.NAME])"
                    )
                }
                for option in section.keys.sorted(by: { Self.order($0, $1, table: key, lines: lines) }) {
                    guard let optionValue = section[option] else { continue }
                    let line = Self.line(ofKey: option, table: key, in: lines)
                    guard let entry = catalog.entries[option] else {
                        throw Failure(
                            description:
                                "\(path):\(line): unknown key \(option) in [\(key)]: \(Self.suggestion(option, among: Set(catalog.entries.keys), command: key))"
                        )
                    }
                    settings.append(try Self.setting(entry, optionValue, line: line, table: key, path: path))
                }
            } else {
                let line = Self.line(ofKey: key, table: nil, in: lines)
                let known = catalogs.values.compactMap { $0.entries[key] }
                guard let entry = known.first else {
                    let all = Set(catalogs.values.flatMap { $0.entries.keys })
                    throw Failure(description: "\(path):\(line): unknown key \(key): \(Self.suggestion(key, among: all, command: nil))")
                }
                settings.append(try Self.setting(entry, value, line: line, table: nil, path: path))
            }
        }
        self.settings = settings
        self.tenants = tenants
    }

    /// Orders keys of `table` by the line that defines them (tables by their header), then by name.
    private static func order(_ a: String, _ b: String, table: String?, lines: [String]) -> Bool {
        let place = { (key: String) in
            let line = line(ofKey: key, table: table, in: lines)
            return line > 0 || table != nil ? line : Self.line(ofTable: key, in: lines)
        }
        let (first, second) = (place(a), place(b))
        return first != second ? first < second : a < b
    }

    /// The arguments the file adds for `command` (a name of ``commands``), before the user's
    /// `given` arguments: the command's own table wins over the top level, and an option the user
    /// gave, or whose environment variable is set, is left out.
    func arguments(for command: String, given: [String], environment: [String: String]) -> [String] {
        settings(for: command, given: given, environment: environment).flatMap(\.arguments)
    }

    /// The settings that become `command`'s arguments (``arguments(for:given:environment:)``), in
    /// the order of their keys.
    func settings(for command: String, given: [String], environment: [String: String]) -> [Setting] {
        guard let catalog = ConfigurationKeys.catalogs[command] else { return [] }
        let overridden = Self.overridden(given: given, environment: environment)
        return catalog.entries.keys.sorted().compactMap { key in overridden(key) ? nil : setting(key, for: command) }
    }

    /// The setting of `key` that `table`'s command gets: from its own table, else from the top
    /// level; `nil` when the file does not set it.
    func setting(_ key: String, for table: String) -> Setting? {
        settings.first { $0.key == key && $0.table == table } ?? settings.first { $0.key == key && $0.table == nil }
    }

    /// Whether an option is given otherwise than by the file, and so not taken from it: on the
    /// command line (`given`), or, for an option an environment variable backs, by that variable.
    static func overridden(given: [String], environment: [String: String]) -> (String) -> Bool {
        let onCommandLine = Set(given.compactMap { longName($0) })
        return { key in
            if onCommandLine.contains(key) { return true }
            guard environmentBacked.contains(key), let value = environment[environmentVariable(key)] else { return false }
            return !value.isEmpty
        }
    }

    /// The file named by `--config FILE` or `--config=FILE` in `arguments`, the last one given.
    static func configPath(_ arguments: [String]) -> String? {
        var path: String?
        for (index, word) in arguments.enumerated() {
            if word == "--config", index + 1 < arguments.count { path = arguments[index + 1] }
            if word.hasPrefix("--config=") { path = String(word.dropFirst("--config=".count)) }
        }
        return path
    }

    /// The option a command-line word names (`--bind` or `--bind=…`), or `nil`.
    static func longName(_ word: String) -> String? {
        guard word.hasPrefix("--"), word.count > 2 else { return nil }
        return String(word.dropFirst(2).prefix { $0 != "=" })
    }

    private static func setting(
        _ entry: CommandOptionCatalog.Entry, _ value: any TOMLValueConvertible, line: Int, table: String?, path: String
    ) throws(Failure) -> Setting {
        let place = "\(path):\(line): \(entry.name)"
        if entry.isFlag {
            guard let flag = value.bool else { throw Failure(description: "\(place) is a flag: write true or false") }
            return Setting(key: entry.name, arguments: flag ? ["--\(entry.name)"] : [], text: "\(flag)", line: line, table: table)
        }
        if let array = value.array {
            guard entry.isRepeating else {
                throw Failure(description: "\(place) takes one value, not a list")
            }
            var words: [String] = []
            var texts: [String] = []
            for element in array {
                guard let word = scalar(element) else { throw Failure(description: "\(place): a list of strings or numbers is expected") }
                words += ["--\(entry.name)", word]
                texts.append(quoted(element, word))
            }
            return Setting(key: entry.name, arguments: words, text: "[\(texts.joined(separator: ", "))]", line: line, table: table)
        }
        guard let word = scalar(value) else {
            throw Failure(description: "\(place) takes a value (a string or a number)\(value.bool != nil ? "; it is not a flag" : "")")
        }
        return Setting(key: entry.name, arguments: ["--\(entry.name)", word], text: quoted(value, word), line: line, table: table)
    }

    /// A string, integer or float as its command-line word.
    private static func scalar(_ value: any TOMLValueConvertible) -> String? {
        switch value.type {
        case .string: value.string
        case .int: value.int.map { String($0) }
        case .double: value.double.map { String($0) }
        default: nil
        }
    }

    /// `word` as TOML writes it: quoted when the file has a string.
    private static func quoted(_ value: any TOMLValueConvertible, _ word: String) -> String {
        value.type == .string ? "\"" + word.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" : word
    }

    /// "did you mean …" for a mistyped key, or where the keys are listed.
    private static func suggestion(_ key: String, among keys: Set<String>, command: String?) -> String {
        let closest = keys.min { distance(key, $0) < distance(key, $1) }
        let help = command.map { "campaign-relay help \($0)" } ?? "campaign-relay help COMMAND"
        if let closest, distance(key, closest) <= max(2, key.count / 3) {
            return "did you mean \(closest)? Keys are the long options of \(help)"
        }
        return "keys are the long options of \(help), without the dashes"
    }

    /// Levenshtein distance, for suggestions.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// The line defining `key` in `table` (`nil`: the top level), found by reading the text as
    /// TOML's grammar lays it out; 0 when not found (a key inside an inline table).
    static func line(ofKey key: String, table: String?, in lines: [String]) -> Int {
        var current: String?
        for (index, raw) in lines.enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if let header = tableName(ofHeader: line) {
                current = header
                continue
            }
            guard current == table else { continue }
            for spelling in [key, "\"\(key)\"", "'\(key)'"] where line.hasPrefix(spelling) {
                if line.dropFirst(spelling.count).trimmingCharacters(in: .whitespaces).hasPrefix("=") { return index + 1 }
            }
        }
        return 0
    }

    /// The line of the header `[table]`; 0 when not found.
    static func line(ofTable table: String, in lines: [String]) -> Int {
        for (index, raw) in lines.enumerated() where tableName(ofHeader: raw.trimmingCharacters(in: .whitespaces)) == table {
            return index + 1
        }
        return 0
    }

    /// The table a trimmed line opens (`[serve]`, `["serve"]`, `[tenant.brand-a]`,
    /// `[tenant . "brand-a"]`: each dotted part without its quotes and spaces), or `nil` for any
    /// other line.
    private static func tableName(ofHeader line: String) -> String? {
        guard line.hasPrefix("[") else { return nil }
        return line.dropFirst().prefix { $0 != "]" }.split(separator: ".", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"'")) }
            .joined(separator: ".")
    }
}

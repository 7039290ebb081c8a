import ArgumentParser
import Foundation

/// The long options and flags a command declares, as swift-argument-parser describes them
/// (`--experimental-dump-help`): what a configuration file may set for that command.
struct CommandOptionCatalog: Sendable {
    /// One option or flag.
    struct Entry: Sendable, Hashable {
        /// Its long name, without the dashes: the key a configuration file uses.
        var name: String
        /// A flag (`true` or `false` in a file) rather than an option with a value.
        var isFlag: Bool
        /// An option that may be given several times (an array in a file).
        var isRepeating: Bool
        /// Its default, as the help shows it, if it has one.
        var defaultValue: String?
        /// What its value is (`n`, `host:port`), as the help names it.
        var valueName: String?
        /// Its help text: what it takes, for a file's value it cannot parse.
        var abstract: String?
    }

    /// The command's name (`serve`).
    let command: String
    /// Its entries by name, the help-only ones (`help`, `version`, `config`) left out.
    let entries: [String: Entry]

    /// Options no file may set: they are not settings of the relay.
    static let excluded: Set<String> = ["help", "version", "config", "experimental-dump-help", "generate-completion-script"]

    /// The catalog of `command`, read from the description swift-argument-parser gives of it.
    init(_ command: any ParsableCommand.Type) {
        self.command = command._commandName
        var entries: [String: Entry] = [:]
        let description = try? JSONDecoder().decode(HelpDescription.self, from: Data(command._dumpHelp().utf8))
        for argument in description?.command.arguments ?? [] {
            guard argument.kind == "option" || argument.kind == "flag" else { continue }
            for name in argument.names ?? [] where name.kind == "long" && !Self.excluded.contains(name.name) {
                entries[name.name] = Entry(
                    name: name.name, isFlag: argument.kind == "flag", isRepeating: argument.isRepeating ?? false,
                    defaultValue: argument.defaultValue, valueName: argument.valueName, abstract: argument.abstract)
            }
        }
        self.entries = entries
    }
}

/// The part of swift-argument-parser's help description (`ToolInfoV0`) the catalog reads.
private struct HelpDescription: Decodable {
    struct Command: Decodable {
        var arguments: [Argument]?
    }

    struct Argument: Decodable {
        var kind: String
        var names: [Name]?
        var isRepeating: Bool?
        var defaultValue: String?
        var valueName: String?
        var abstract: String?
    }

    struct Name: Decodable {
        var kind: String
        var name: String
    }

    var command: Command
}

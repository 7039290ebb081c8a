import ArgumentParser

/// "Did you mean …" for a misspelt command name (`campaign-relay serv`, `campaign-relay wal verfy`).
///
/// swift-argument-parser suggests the closest option for a misspelt option, but for a word where a
/// subcommand's name must stand it only says "Unexpected argument". The root command's error path
/// asks this type whether the command line holds such a word close to a real name, and prints the
/// suggestion instead, with the usage of the command it belongs to and the same exit status (64,
/// a usage error). Any other mistake, or a word close to no name, keeps argument-parser's message.
struct SubcommandSuggestion: Sendable, Equatable {
    /// The command whose subcommand was misspelt, as typed (`campaign-relay wal`).
    var command: String
    /// The word given.
    var word: String
    /// The subcommand meant.
    var suggestion: String
    /// The command's usage (`campaign-relay wal <subcommand>`).
    var usage: String

    /// The suggestion for `arguments` (without the program name) of `root`; `nil` unless a word
    /// where a subcommand's name must stand is no subcommand's and is close to one.
    init?<Root: ParsableCommand>(_ arguments: [String], root: Root.Type) {
        var command: any ParsableCommand.Type = root
        var path = [root._commandName]
        var remaining = arguments[...]
        while let word = remaining.first {
            let subcommands = command.configuration.subcommands
            // A leaf command takes anything; an option ends the names (its own errors are argument-parser's).
            guard !subcommands.isEmpty, !word.hasPrefix("-") else { return nil }
            var byName: [String: any ParsableCommand.Type] = [:]
            for subcommand in subcommands {
                byName[subcommand._commandName] = subcommand
                for alias in subcommand.configuration.aliases { byName[alias] = subcommand }
            }
            if let next = byName[word] {
                command = next
                path.append(word)
                remaining = remaining.dropFirst()
                continue
            }
            // argument-parser's own `help` subcommand, at any level.
            guard word != "help", let closest = Self.closest(to: word, among: subcommands.map { $0._commandName }) else { return nil }
            self.command = path.joined(separator: " ")
            self.word = word
            self.suggestion = closest
            self.usage = root.usageString(for: command)
            return
        }
        return nil
    }

    /// The name of `names` that `word` most likely misspells: within a small edit distance (one
    /// edit for names of up to 5 characters, two beyond), or the one name `word` begins (`dead`
    /// for `deadletter`); `nil` when none is close.
    static func closest(to word: String, among names: [String]) -> String? {
        let allowed = { (name: String) in name.count <= 5 ? 1 : 2 }
        let near = names.map { (name: $0, distance: ConfigurationFile.distance(word, $0)) }.filter { $0.distance <= allowed($0.name) }
        if let best = near.min(by: { ($0.distance, $0.name) < ($1.distance, $1.name) }) { return best.name }
        let prefixed = names.filter { word.count >= 3 && $0.hasPrefix(word) }
        return prefixed.count == 1 ? prefixed.first : nil
    }

    /// What is printed on standard error, as argument-parser prints a usage error.
    var message: String {
        """
        Error: \(command) has no command '\(word)'. Did you mean '\(suggestion)'?
        Usage: \(usage)
          See '\(command) --help' for more information.

        """
    }
}

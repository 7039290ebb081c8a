import ArgumentParser
import Foundation

/// Checks the values a configuration file gives a command with that command's own parsers: the
/// file's settings become the command line they stand for, and swift-argument-parser parses it and
/// runs the command's `validate()` (host:port, durations, sizes, URLs, ranges), exactly as when the
/// command starts. A value it refuses is blamed on the setting that gave it, with its line.
///
/// Why not a second set of rules for files: a file checked by other rules than the command's would
/// be "valid" and still refused by `serve` (the mistake this check exists to catch).
enum ConfigurationValueCheck {
    /// One value a command refuses, where the file gives it.
    struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// The setting at fault.
        var setting: ConfigurationFile.Setting
        /// The command whose parser refused it (`serve`).
        var command: String
        /// What the parser said.
        var message: String
        /// `file:line key = value: what is wrong; what is expected`.
        var description: String
    }

    /// The values of `file` that a command taking them refuses: for each command of
    /// ``ConfigurationFile/commands`` (`serve` first), each setting it would take, unless the
    /// environment gives that option. A setting is reported once, for the first command refusing it.
    static func problems(in file: ConfigurationFile, environment: [String: String]) -> [Problem] {
        let order = ["serve"] + ConfigurationFile.commands.keys.filter { $0 != "serve" }.sorted()
        var problems: [Problem] = []
        var blamed: Set<ConfigurationFile.Setting> = []
        for command in order {
            var settings = file.settings(for: command, given: [], environment: environment).filter { !blamed.contains($0) }
            // Each pass finds one refused value and leaves it out, so one run reports every bad value.
            while let error = parseError(command: command, arguments: settings.flatMap(\.arguments)) {
                let message = CampaignRelayCommand.message(for: error)
                guard let culprit = culprit(of: message, command: command, among: settings) else {
                    // Not a value of the file: an argument only the command line gives (replay's
                    // --from), checked when the command runs.
                    break
                }
                blamed.insert(culprit)
                settings.removeAll { $0 == culprit }
                problems.append(problem(culprit, command: command, message: message, path: file.path))
            }
        }
        return problems.sorted { ($0.setting.line, $0.setting.key) < ($1.setting.line, $1.setting.key) }
    }

    /// The setting of `file` to blame for `error`, a failure to parse `command`'s arguments built
    /// from `file` and the user's `given` ones; `nil` when the file's values are not at fault.
    static func blame(_ error: any Error, command: String, given: [String], file: ConfigurationFile, environment: [String: String]) -> Problem? {
        guard ConfigurationFile.commands[command] != nil else { return nil }
        let settings = file.settings(for: command, given: given, environment: environment)
        let message = CampaignRelayCommand.message(for: error)
        guard let culprit = culprit(of: message, command: command, among: settings, given: given) else { return nil }
        return problem(culprit, command: command, message: message, path: file.path)
    }

    /// The error parsing `command` with `arguments` (and the user's `given`) gives, or `nil`.
    private static func parseError(command: String, arguments: [String], given: [String] = []) -> (any Error)? {
        do {
            _ = try CampaignRelayCommand.parseAsRoot([command] + arguments + given)
            return nil
        } catch {
            return error
        }
    }

    /// The setting whose value gives `message`: the one whose option the message names, or else the
    /// first one (in file order) without which the command no longer fails that way.
    private static func culprit(
        of message: String, command: String, among settings: [ConfigurationFile.Setting], given: [String] = []
    ) -> ConfigurationFile.Setting? {
        let inFileOrder = settings.sorted { $0.line < $1.line }
        if let named = inFileOrder.filter({ names(message, option: $0.key) }).max(by: { $0.key.count < $1.key.count }) {
            return named
        }
        for setting in inFileOrder {
            let without = settings.filter { $0 != setting }.flatMap(\.arguments)
            let other = parseError(command: command, arguments: without, given: given).map { CampaignRelayCommand.message(for: $0) }
            if other != message { return setting }
        }
        return nil
    }

    /// Whether `message` names `--option` as a whole word (`--retain`, not `--retain-bytes`).
    private static func names(_ message: String, option: String) -> Bool {
        var rest = Substring(message)
        while let range = rest.range(of: "--" + option) {
            let next = rest[range.upperBound...].first
            if next.map({ !($0.isLetter || $0.isNumber || $0 == "-") }) ?? true { return true }
            rest = rest[range.upperBound...]
        }
        return false
    }

    private static func problem(_ setting: ConfigurationFile.Setting, command: String, message: String, path: String) -> Problem {
        let entry = ConfigurationKeys.catalogs[command]?.entries[setting.key]
        var what = message.trimmingCharacters(in: .whitespacesAndNewlines)
        // argument-parser says only that the value is invalid: add what the option takes.
        if what.hasPrefix("The value '"), let entry {
            let meaning = entry.abstract.map { text in
                " (" + text.prefix(1).lowercased() + text.dropFirst().trimmingCharacters(in: CharacterSet(charactersIn: ".")) + ")"
            }
            what = "\(command)'s --\(setting.key) takes \(entry.valueName.map { "<\($0)>" } ?? "another value")\(meaning ?? "")"
        }
        let place = setting.table.map { " of [\($0)]" } ?? ""
        return Problem(
            setting: setting, command: command, message: message,
            description: "\(path):\(setting.line): \(setting.key)\(place) = \(setting.text): \(what)")
    }
}

/// `docs/configuration.md`'s tables of keys, written from the one table of keys
/// (``ConfigurationKeys``): the keys of `[tenant.NAME]`, and every option a file may set.
///
/// Each table sits in the document between two marker lines (``begin(_:)`` and ``end(_:)``);
/// ``regenerated(_:)`` gives the document with what is between them written anew, and
/// `ConfigurationDocumentationTests` fails while the document and the table differ (its failure
/// says how to write the document again).
enum ConfigurationKeyDocumentation {
    /// A generated part of the document: its name in the markers, and its text.
    struct Section: Sendable {
        var name: String
        var text: @Sendable () -> String
    }

    /// The generated parts of `docs/configuration.md`.
    static let sections = [
        Section(name: "tenant keys", text: { tenantKeysTable() }),
        Section(name: "every key", text: { everyKeyTable() }),
    ]

    /// The line that opens the section `name`.
    static func begin(_ name: String) -> String {
        "<!-- \(name): generated from ConfigurationKeys (Sources/CampaignRelay/Support); see docs/seams/config.md -->"
    }

    /// The line that closes the section `name`.
    static func end(_ name: String) -> String {
        "<!-- end of \(name) -->"
    }

    /// `document` with each section's lines between its markers written from the table now;
    /// `nil` when a section's markers are missing (or out of order).
    static func regenerated(_ document: String) -> String? {
        var lines = document.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for section in sections {
            guard let first = lines.firstIndex(of: begin(section.name)),
                let last = lines[first...].firstIndex(of: end(section.name))
            else { return nil }
            lines.replaceSubrange((first + 1)..<last, with: section.text().split(separator: "\n").map(String.init))
        }
        return lines.joined(separator: "\n")
    }

    /// The keys of `[tenant.NAME]` (`keys`: the table's; a test may add one): name, reload and
    /// meaning.
    static func tenantKeysTable(_ keys: [ConfigurationKey] = ConfigurationKeys.tenantKeys) -> String {
        var rows = ["| key of `[tenant.NAME]` | reload | meaning |", "|---|---|---|"]
        for key in keys {
            rows.append("| \(key.name) | \(reload(key.reload)) | \(cell(key.help)) |")
        }
        return rows.joined(separator: "\n")
    }

    /// Every option a file may set: name, kind, default, the commands that take it (its scope),
    /// its environment variable, reload and meaning.
    static func everyKeyTable() -> String {
        var rows = ["| key | kind | default | commands | environment | reload | meaning |", "|---|---|---|---|---|---|---|"]
        for key in ConfigurationKeys.options {
            guard case .option(let entry) = key.reading else { continue }
            let kind = entry.isFlag ? "flag" : (entry.isRepeating ? "list of " : "") + (entry.valueName ?? "value")
            let defaultValue: String? =
                entry.isFlag ? (entry.defaultValue == "--\(entry.name)" ? "true" : "false") : entry.defaultValue
            let variable = ConfigurationFile.environmentBacked.contains(key.name) ? "`\(ConfigurationFile.environmentVariable(key.name))`" : ""
            let cells = [
                "`\(key.name)`", cell(kind), defaultValue.map { "`\($0)`" } ?? "", commands(key.scope), variable, reload(key.reload), cell(key.help),
            ]
            rows.append("| " + cells.joined(separator: " | ") + " |")
        }
        return rows.joined(separator: "\n")
    }

    /// The commands column: `serve, upload, replay`, `all six`, then the data-directory
    /// commands after a `;`, a group named once (`wal verify, dump and rekey`; all of a group:
    /// `wal`).
    static func commands(_ scope: ConfigurationKey.Scope) -> String {
        guard case .option(let commands, let dataDirectoryCommands, let topLevel) = scope else { return "[tenant.NAME]" }
        var text = commands == ConfigurationKeys.commandNames ? "all six" : commands.joined(separator: ", ")
        if !topLevel { text += " (in " + commands.map { "`[\($0)]`" }.joined(separator: ", ") + " only)" }
        guard !dataDirectoryCommands.isEmpty else { return text }
        let all = RelayConfigFileOption.commands.map { $0.words }
        var groups: [String] = []
        for group in all.map({ $0[0] }) where !groups.contains(group) { groups.append(group) }
        let parts = groups.compactMap { group -> String? in
            let members = all.filter { $0[0] == group }
            let taking = members.filter { dataDirectoryCommands.contains($0.joined(separator: " ")) }
            guard !taking.isEmpty else { return nil }
            if taking.count == members.count { return group }
            return group + " " + listed(taking.map { $0.dropFirst().joined(separator: " ") })
        }
        return text + "; " + parts.joined(separator: ", ")
    }

    /// When a running `serve` takes a new value, as the reload column says it.
    static func reload(_ reload: ConfigurationKey.Reload) -> String {
        switch reload {
        case .restart: "next start"
        case .sighup: "SIGHUP"
        case .fileOnSIGHUP: "next start; the file is read again on SIGHUP"
        }
    }

    /// `a`, `a and b`, `a, b and c`.
    private static func listed(_ items: [String]) -> String {
        guard let last = items.last, items.count > 1 else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " and " + last
    }

    /// `text` as a table cell: a `|` escaped.
    private static func cell(_ text: String) -> String {
        text.split(separator: "|", omittingEmptySubsequences: false).joined(separator: "\\|")
    }
}

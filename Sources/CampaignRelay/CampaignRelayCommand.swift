import ArgumentParser
import RelayCore

/// The `campaign-relay` command: a durable relay for Adobe Campaign mobile events.
@main
struct CampaignRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "campaign-relay",
        abstract: "Durably relay Adobe Campaign mobile events (registrations, push tracking).",
        discussion: """
            Events are appended to a crash-safe, zlib-compressed write-ahead log under
            --data-dir (default ./relay-data) and acknowledged only once fdatasync'ed.

            Event format (one JSON object per line; README.md lists every field):
              {"kind":"track","action":"open","messageId":"55336","deliveryId":"f0190"}
              {"kind":"register","platform":"android","integrationKey":"key",
               "registrationToken":"fcm-token","userKey":"ada"}

            Start with: campaign-relay serve (then campaign-relay help serve).
            """,
        version: RelayVersion.current,
        subcommands: [
            ServeCommand.self, IngestCommand.self, AggregateCommand.self, StatsCommand.self, UploadCommand.self, ReplayCommand.self,
            DeadLetterCommand.self, EraseCommand.self,
            EmulateCommand.self, WALCommand.self, ConfigCommand.self,
        ]
    )

    /// Expands `--config FILE` into the options it sets (see ``ConfigurationFile`` and
    /// ``RelayConfigFileOption``), then runs the command as swift-argument-parser's own `main`
    /// would, with "did you mean" for a misspelt command name (``SubcommandSuggestion``).
    static func main() async {
        let given = Array(CommandLine.arguments.dropFirst())
        // `help serv`: argument-parser would print the top-level help and exit 0, as if asked for it.
        if given.first == "help", given.count > 1 { exitSuggesting(Array(given.dropFirst())) }
        let environment = ConfigurationFile.currentEnvironment()
        let arguments: [String]
        let file: ConfigurationFile?
        do throws(ConfigurationFile.Failure) {
            if let expanded = try RelayConfigFileOption.expand(given, environment: environment) {
                (arguments, file) = (expanded, nil)
            } else {
                (arguments, file) = try ConfigurationFile.expanding(given, environment: environment)
            }
        } catch {
            // `serv --config FILE`: the misspelt name is the mistake, not where --config is.
            exitSuggesting(given)
            exit(withError: RuntimeFailure(error.description))
        }
        var command: any ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            exitSuggesting(given)
            // A value the file gave is the file's mistake, not the command line's: name its line.
            if let file, let name = given.first,
                let problem = ConfigurationValueCheck.blame(
                    error, command: name, given: Array(given.dropFirst()), file: file, environment: environment)
            {
                exit(withError: RuntimeFailure(problem.description + " (campaign-relay config check \(file.path) lists every such value)"))
            }
            exit(withError: error)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// Exits with the usage error's status (64) after printing "did you mean" when `arguments`
    /// misspell a command's name; returns otherwise.
    private static func exitSuggesting(_ arguments: [String]) {
        guard let suggestion = SubcommandSuggestion(arguments, root: Self.self) else { return }
        var errors = StandardOutput.error()
        errors.write(suggestion.message)
        errors.flush()
        exit(withError: ExitCode.validationFailure)
    }
}

import ArgumentParser
import Logging

/// Options every command takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Directory holding the log, cursors and quarantine.", valueName: "path"))
    var dataDir: String = "./relay-data"

    @Flag(name: .long, help: "Print machine-readable JSON instead of text.")
    var json = false

    @Option(name: .long, help: ArgumentHelp("Log level on stderr: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: LogLevelOption = .notice

    /// A logger writing to standard error at the chosen level.
    func logger(_ label: String) -> Logger {
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = Logger.Level(rawValue: logLevel.rawValue) ?? .notice
        return logger
    }
}

/// The `--log-level` values (swift-log's levels).
enum LogLevelOption: String, CaseIterable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical
}

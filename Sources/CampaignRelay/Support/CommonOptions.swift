import ArgumentParser
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// Options every command takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Directory holding the log, cursors and quarantine.", valueName: "path"))
    var dataDir: String = "./relay-data"

    @Flag(name: .long, help: "Print machine-readable JSON instead of text (results on stdout, logs on stderr as JSON lines).")
    var json = false

    @Option(name: .long, help: ArgumentHelp("Log level on stderr: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: LogLevelOption = .notice

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Log lines on stderr: text, or json (one object per line, for log shippers; the default with --json).", valueName: "format"))
    var logFormat: LogFormatOption?

    /// Fails with what to do when `--data-dir` does not exist (commands that only read what is there).
    func requireDataDirectory() throws {
        var status = stat()
        guard stat(dataDir, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
            throw RuntimeFailure(
                "no data directory at \(dataDir): nothing was stored there yet; give --data-dir the directory `serve` or `ingest` use, or --config with the relay's configuration file"
            )
        }
    }

    /// Whether `--data-dir` holds a log in files (a `wal/` directory).
    var holdsLog: Bool {
        var status = stat()
        return stat(dataDir + "/wal", &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }

    /// Fails with what to do when `--data-dir` does not exist, or holds no log (`wal/`): the
    /// commands that read or rewrite the log's segments (`wal …`).
    func requireLog() throws {
        try requireDataDirectory()
        guard holdsLog else {
            throw RuntimeFailure(
                "no log in \(dataDir): it has no wal/ directory, so nothing was stored there yet; give --data-dir the directory `serve` or `ingest` use, or --config with the relay's configuration file"
            )
        }
    }

    /// A logger writing to standard error at the chosen level: text, or JSON lines with
    /// `--log-format json` or `--json`.
    func logger(_ label: String) -> Logger {
        Self.logger(label, level: logLevel, json: LogFormatOption.jsonLines(logFormat, json: json))
    }

    /// A logger writing to standard error at `level`, as JSON lines when `json`.
    static func logger(_ label: String, level: LogLevelOption, json: Bool) -> Logger {
        var logger = Logger(label: label) { json ? JSONLogHandler(label: $0) as any LogHandler : StreamLogHandler.standardError(label: $0) }
        logger.logLevel = Logger.Level(rawValue: level.rawValue) ?? .notice
        return logger
    }
}

/// The `--log-level` values (swift-log's levels).
enum LogLevelOption: String, CaseIterable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical
}

/// The `--log-format` values.
enum LogFormatOption: String, CaseIterable, ExpressibleByArgument {
    case text, json

    /// Whether log lines are JSON: as `--log-format` says, else as `--json` does.
    static func jsonLines(_ format: LogFormatOption?, json: Bool) -> Bool {
        format.map { $0 == .json } ?? json
    }
}

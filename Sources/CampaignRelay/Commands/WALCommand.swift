import ArgumentParser

/// `campaign-relay wal`: inspect the write-ahead log.
struct WALCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wal",
        abstract: "Inspect the write-ahead log (read-only).",
        subcommands: [WALVerifyCommand.self, WALDumpCommand.self]
    )
}

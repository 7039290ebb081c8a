import ArgumentParser

/// `campaign-relay wal`: inspect the write-ahead log.
struct WALCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wal",
        abstract: "Inspect the write-ahead log (read-only) and copy it into an archive.",
        subcommands: [WALVerifyCommand.self, WALDumpCommand.self, WALArchiveCommand.self, WALRekeyCommand.self]
    )
}

import ArgumentParser

/// `campaign-relay wal`: check, print, archive and re-encrypt the write-ahead log.
struct WALCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wal",
        abstract: "Check, print, archive and re-encrypt the write-ahead log.",
        discussion: """
            verify and dump only read the log. archive copies its sealed segments into an archive \
            directory and leaves the log as it is. rekey rewrites segments (of the log and the \
            archives named) and the dead letters, so that all are sealed with the newest key of \
            --encryption-key-file. Each works beside a running serve, and takes --config with \
            the relay's configuration file.
            """,
        subcommands: [WALVerifyCommand.self, WALDumpCommand.self, WALArchiveCommand.self, WALRekeyCommand.self]
    )
}

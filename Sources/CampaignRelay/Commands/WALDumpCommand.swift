import ArgumentParser
import RelayCore
import RelayLog

/// `campaign-relay wal dump`: prints events as JSONL.
struct WALDumpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print logged events as JSONL, each with its sequence number (\"seq\").",
        discussion: """
            Fields are those of the ingest format, with every value as it was ingested; the output \
            can be fed back to ingest (the "seq" field aside). Damaged frames are skipped and \
            reported on standard error.
            """
    )

    @Option(name: .long, help: ArgumentHelp("First sequence number to print.", valueName: "seq"))
    var from: UInt64 = 1

    @Option(name: .long, help: ArgumentHelp("Print at most this many events.", valueName: "n"))
    var limit: Int?

    @OptionGroup var common: CommonOptions

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
    }

    func run() async throws {
        let layout = LogLayout(dataDirectory: common.dataDir)
        var reader = LogReader(walDirectory: layout.walDirectory, from: from)
        defer { reader.close() }
        var output = StandardOutput.output()
        var errors = StandardOutput.error()
        var remaining = limit ?? Int.max
        while remaining > 0 {
            let batch = try reader.read(maximumEvents: min(remaining, 65_536))
            for damage in batch.damage { errors.line("warning: skipped \(damage)") }
            errors.flush()
            if batch.events.isEmpty { break }
            for event in batch.events { output.line(EventEncoder.json(event.event, sequence: event.sequence)) }
            remaining -= batch.events.count
        }
        output.flush()
    }
}

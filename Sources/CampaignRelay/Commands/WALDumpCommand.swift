import ArgumentParser
import RelayCore
import RelayEventJSON
import RelayIO
import RelayLog

/// `campaign-relay wal dump`: prints events as JSONL.
struct WALDumpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print logged events as JSONL, each with its sequence number (\"seq\").",
        discussion: """
            Fields are those of the ingest format, with every value as it was ingested; the output \
            can be fed back to ingest (the "seq" field aside). Damaged frames are skipped and \
            reported on standard error. With --log-postgres-url, the stream of --relay-name in the \
            log database (serve --log-postgres-url) is printed instead of --data-dir's files.
            """
    )

    @Option(name: .long, help: ArgumentHelp("First sequence number to print.", valueName: "seq"))
    var from: UInt64 = 1

    @Option(name: .long, help: ArgumentHelp("Print at most this many events.", valueName: "n"))
    var limit: Int?

    @OptionGroup var storedLog: StoredLogOptions

    @OptionGroup var encryption: EncryptionOptions

    @OptionGroup var common: CommonOptions

    @OptionGroup var configFile: RelayConfigFileOption

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
    }

    func run() async throws {
        let keys = try await encryption.keyRing()
        let stream = try await storedLog.stream(dataDirectory: common.dataDir, keys: keys)
        if stream == nil { try common.requireLog() }
        let stored = stream ?? .files(walDirectory: LogLayout(dataDirectory: common.dataDir).walDirectory, keys: keys)
        // The log is read on a thread of its own (its files, or PostgreSQL's answers waited for);
        // the reader moves there and back.
        let reading = BlockingExecutor(name: "wal-dump")
        var reader = stored.steps(from: from)
        let close = { (reader: LogFollower.Steps) async in _ = await reading.run(moving: reader) { (owned: inout LogFollower.Steps) in owned.close() }
        }
        var output = StandardOutput.output()
        var errors = StandardOutput.error()
        var remaining = limit ?? Int.max
        while remaining > 0 {
            let count = min(remaining, 65_536)
            let (returned, result) = await reading.run(moving: reader) { (owned: inout LogFollower.Steps) throws(LogError) in
                try owned.read(maximumEvents: count)
            }
            reader = returned
            let batch: LogReadBatch
            do {
                batch = try result.get()
            } catch {
                await close(reader)
                throw error
            }
            for damage in batch.damage { errors.line("warning: skipped \(damage)") }
            errors.flush()
            if batch.events.isEmpty { break }
            for event in batch.events { output.line(EventEncoder.json(event.event, sequence: event.sequence)) }
            remaining -= batch.events.count
        }
        await close(reader)
        output.flush()
    }
}

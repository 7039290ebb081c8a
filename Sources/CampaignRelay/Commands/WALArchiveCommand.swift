import ArgumentParser
import RelayCore
import RelayEventJSON
import RelayIO
import RelayLog
import RelayServer

/// `campaign-relay wal archive`: copies sealed segments into an archive directory on demand.
struct WALArchiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "archive",
        abstract: "Copy the log's sealed segments into an archive directory (crash-safe: copy, fsync, rename).",
        discussion: """
            Copies every sealed segment (every one but the segment being written), or with \
            --before those whose last event was written before TIME, into DIR under the same \
            names, skipping those DIR already holds byte for byte. The log is not changed: its \
            retention (--retain, --retain-bytes) deletes segments in its own time, and with \
            --archive-dir a server archives each one as it goes. Safe beside a running server. \
            `wal verify --archive DIR` checks an archive; `replay --from-archive DIR` and \
            `stats --rebuild --from-archive DIR` read it. Exit status 0, or 1 when a segment \
            could not be copied (those before it are archived).
            """
    )

    @Option(name: .long, help: ArgumentHelp("The archive directory (created if missing).", valueName: "dir"))
    var to: String

    @Option(name: .long, help: ArgumentHelp("Only segments whose last event was written before this RFC 3339 time.", valueName: "time"))
    var before: String?

    @OptionGroup var common: CommonOptions

    @OptionGroup var configFile: RelayConfigFileOption

    func validate() throws {
        guard !to.isEmpty else { throw ValidationError("--to must name a directory") }
        if let before {
            do { _ = try EventTime(rfc3339: before, field: "--before") } catch { throw ValidationError("--before: \(error.message)") }
        }
    }

    func run() async throws {
        try common.requireLog()
        let walDirectory = LogLayout(dataDirectory: common.dataDir).walDirectory
        let cutoff = try before.map { try EventTime(rfc3339: $0, field: "--before").nanosecondsSinceEpoch }
        let archive = SegmentArchive(directory: to)
        let json = common.json
        let report: LogArchiver.Report
        do {
            report = try await BlockingExecutor(name: "wal-archive").run { () throws(LogError) in
                var errors = StandardOutput.error()
                return try LogArchiver.archive(walDirectory: walDirectory, into: archive, sealedBefore: cutoff) { name, outcome in
                    guard !json else { return }
                    errors.line(outcome == .copied ? "copied \(name)" : "already archived \(name)")
                    errors.flush()
                }
            }
        } catch {
            throw RuntimeFailure("\(error)")
        }
        var output = StandardOutput.output()
        if json {
            output.line(APIJSON.text(report))
        } else {
            output.line(
                "archived into \(to): \(counted(report.copied.count, "segment")) copied (\(counted(report.bytesCopied, "byte"))), \(report.alreadyArchived.count) already there"
            )
            for skipped in report.skipped { output.line("skipped \(skipped.segment): \(skipped.reason)") }
        }
        output.flush()
    }
}

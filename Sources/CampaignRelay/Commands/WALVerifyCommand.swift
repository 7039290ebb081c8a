import ArgumentParser
import RelayCore
import RelayEventJSON
import RelayIO
import RelayLog
import RelayPostgres
import RelayServer

/// `campaign-relay wal verify`: checks every frame without changing anything.
struct WALVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every frame of every segment (CRCs and decoding) without changing anything.",
        discussion: """
            Reports the relay id and epoch of the data directory, segments, frames, events, corrupt \
            frames, torn tails and bytes per event. \
            Encrypted frames are opened and decoded with --encryption-key-file; without it their \
            structure and CRCs are still checked and the frames each key id sealed are counted. \
            Exit status 0 when the log is clean, 1 when damage was found (the relay repairs or skips \
            it by itself on open; this command only reports).

            With --log-postgres-url, the rows of the stream of --relay-name in the log database \
            (serve --log-postgres-url) are checked the same way; its spans are counted where \
            segments are, and each damage names its row (stream NAME at FIRST-SEQUENCE).
            """
    )

    @Option(name: .long, help: ArgumentHelp("Verify this archive of segments (--archive-dir, `wal archive`) instead of the log.", valueName: "dir"))
    var archive: String?

    @OptionGroup var storedLog: StoredLogOptions

    @OptionGroup var encryption: EncryptionOptions

    @OptionGroup var common: CommonOptions

    @OptionGroup var configFile: RelayConfigFileOption

    func validate() throws {
        if archive != nil, storedLog.url != nil {
            throw ValidationError("--archive names segment files; a log in PostgreSQL (--log-postgres-url) keeps no archive: give one of them")
        }
    }

    func run() async throws {
        // An archive is checked without the data directory; the log is in it (or in PostgreSQL).
        if archive == nil, storedLog.url == nil { try common.requireLog() }
        let keys = try await encryption.keyRing()
        if let (location, stream) = try await storedLog.named(dataDirectory: common.dataDir) {
            let report = try await BlockingExecutor(name: "wal-verify").run { () throws(LogError) in
                try PostgresLogVerifier.verify(stream: stream, location: location, keys: keys)
            }
            return try print(report, stream: stream)
        }
        let layout = LogLayout(dataDirectory: common.dataDir)
        let dataDirectory = common.dataDir
        let directory = archive ?? layout.walDirectory
        let reads = BlockingExecutor(name: "wal-verify")
        if let archive { try await ArchiveDirectoryCheck.requireExisting(archive) }
        let report = try await reads.run { () throws(LogError) in
            var report = try LogVerifier.verify(walDirectory: directory, keys: keys)
            if archive == nil { report.identity = RelayIdentity.read(dataDirectory: dataDirectory) }
            return report
        }
        try print(report, stream: nil)
    }

    /// Prints `report` (of the log's files, or of `stream` in PostgreSQL); exit 1 when it found damage.
    private func print(_ report: LogVerifier.Report, stream: String?) throws {
        var output = StandardOutput.output()
        if common.json {
            output.line(APIJSON.text(report))
        } else {
            if let stream { output.line("stream:            \(stream) (PostgreSQL)") }
            if let identity = report.identity {
                output.line("relay id:          \(identity.relayID)")
                output.line("epoch:             \(identity.epoch.number) (since sequence \(identity.epoch.firstSequence))")
            }
            output.line((stream == nil ? "segments:          " : "spans:             ") + "\(report.segments)")
            output.line("frames:            \(report.frames)")
            output.line("events:            \(report.events)")
            if let first = report.firstSequence, let last = report.lastSequence { output.line("sequences:         \(first) to \(last)") }
            if let time = report.firstEventTime { output.line("first event time:  \(time.rfc3339)") }
            output.line("bytes:             \(report.bytes)")
            output.line("bytes per event:   \(String(format2: report.bytesPerEvent))")
            output.line("preallocated:      \(counted(report.preallocatedBytes, "byte")) not used yet")
            output.line("corrupt frames:    \(report.corruptFrames)")
            output.line("torn tails:        \(report.tornTails)")
            output.line("superseded frames: \(report.supersededFrames)")
            output.line("missing sequences: \(report.missingSequences)")
            if report.encryptedFrames > 0 {
                let byKey = report.framesByKeyID.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                output.line("encrypted frames:  \(report.encryptedFrames) (by key: \(byKey))")
                if report.unopenedFrames > 0 {
                    output.line("  \(report.unopenedFrames) not opened (no --encryption-key-file): structure and CRCs checked, events not decoded")
                }
            }
            for damage in report.damage { output.line("  \(damage)") }
            if stream != nil {
                output.line(report.isClean ? "stream is clean" : "stream has damage (its readers skip the damaged rows, as the relay does)")
            } else {
                output.line(report.isClean ? "log is clean" : "log has damage (the relay skips or repairs it on open; copies go to quarantine/)")
            }
        }
        output.flush()
        if !report.isClean { throw ExitCode(1) }
    }
}

extension String {
    /// `value` with two decimals.
    init(format2 value: Double) {
        let hundredths = Int((value * 100).rounded())
        let fraction = String(hundredths % 100)
        self = "\(hundredths / 100).\(fraction.count == 1 ? "0" : "")\(fraction)"
    }
}

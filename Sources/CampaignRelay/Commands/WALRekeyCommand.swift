import ArgumentParser
import RelayForwarding
import RelayIO
import RelayLog
import RelayServer

/// `campaign-relay wal rekey`: rewrites the log's segments, and archives, under the newest key.
struct WALRekeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Rewrite the log's segments (and archives) so that every frame is sealed with the newest key.",
        discussion: """
            Frames in the clear are encrypted and frames sealed with an older key of \
            --encryption-key-file are sealed again with its newest (last) key; segments already \
            sealed with it are left as they are. Each segment is rewritten crash-safely (a \
            temporary copy, fdatasync, rename, directory fsync): after a crash or an interruption, \
            run the command again. Restart a running server with the new key file first: it \
            cannot read segments sealed with a key its file lacks. Safe beside a running server: \
            then the segment the server \
            appends to is left alone (the server seals it with the newest key once it was started \
            with the same key file; run the command again after it rolls). Without a server the \
            whole log is rewritten. Once every key but the newest has no frame left (`wal verify \
            --json` shows framesByKeyId), the older keys may leave the key file. The dead letters \
            of forwarding.sqlite are sealed with the newest key too. Exit status 0, or \
            1 with the segment that could not be rewritten (those before it are done).
            """
    )

    @Option(
        name: .customLong("archive-dir"),
        help: ArgumentHelp("Also rewrite the segments of this archive directory (--archive-dir of serve; repeatable).", valueName: "dir"))
    var archiveDirectories: [String] = []

    @OptionGroup var encryption: EncryptionOptions

    @OptionGroup var common: CommonOptions

    @OptionGroup var configFile: RelayConfigFileOption

    func validate() throws {
        guard encryption.encryptionKeyFile != nil else {
            throw ValidationError("--encryption-key-file is required: the file whose newest (last) key the segments are sealed with")
        }
        if archiveDirectories.contains(where: \.isEmpty) { throw ValidationError("--archive-dir must not be empty") }
    }

    func run() async throws {
        try common.requireLog()
        guard let keys = try await encryption.keyRing() else { return }
        for archive in archiveDirectories { try await ArchiveDirectoryCheck.requireExisting(archive) }
        let layout = LogLayout(dataDirectory: common.dataDir)
        let walDirectory = layout.walDirectory
        let directories = [walDirectory] + archiveDirectories
        let json = common.json
        let logger = common.logger("campaign-relay.rekey")
        let reports = try await BlockingExecutor(name: "wal-rekey").run { () throws(RuntimeFailure) -> [LogRekey.Report] in
            let fileSystem = PosixFileSystem()
            // Holding the log's lock, no server appends: its newest segment is rewritten too.
            let lock: (any FileHandle)?
            do throws(FileSystemError) {
                lock = try fileSystem.lockExclusively(layout.lockFile)
            } catch  where error.errno == LogLayout.lockHeldErrno {
                lock = nil
            } catch {
                throw RuntimeFailure("cannot open the log's lock \(layout.lockFile): \(error)")
            }
            defer { lock?.close() }
            if lock == nil { logger.notice("a server holds the log: the segment it appends to is left alone") }
            var progress = ProgressLine(enabled: !json)
            var reports: [LogRekey.Report] = []
            for directory in directories {
                do {
                    let report = try LogRekey.rekey(
                        directory: directory, walDirectory: walDirectory, keys: keys, skippingNewest: directory == walDirectory && lock == nil,
                        fileSystem: fileSystem
                    ) { so in
                        progress.update("rekeying \(directory): \(so.segmentsRewritten) rewritten, \(so.segmentsCurrent) already under \(so.keyId)")
                    }
                    progress.finish()
                    reports.append(report)
                } catch {
                    progress.finish()
                    throw RuntimeFailure("rekeying \(directory): \(error)")
                }
            }
            return reports
        }
        var deadLetters = ForwardingStore.Reseal(letters: 0, journalCleared: true)
        if PosixFileSystem().exists(ForwardingStore.path(dataDirectory: common.dataDir)) {
            do {
                let store = try await ForwardingStore(dataDirectory: common.dataDir, keys: keys)
                deadLetters = try await store.resealDeadLetters()
            } catch {
                throw RuntimeFailure("sealing the dead letters of \(ForwardingStore.path(dataDirectory: common.dataDir)): \(error)")
            }
        }
        var output = StandardOutput.output()
        if json {
            output.line(
                APIJSON.text(
                    RekeyOutput(directories: reports, deadLettersResealed: deadLetters.letters, deadLetterJournalCleared: deadLetters.journalCleared))
            )
        } else {
            for report in reports {
                var line =
                    "\(report.directory): \(counted(report.segmentsRewritten, "segment")) rewritten under key \(report.keyId) (\(counted(report.framesEncrypted, "frame")) encrypted, \(report.framesResealed) sealed again), \(report.segmentsCurrent) already under it"
                if report.segmentsGone > 0 { line += ", \(report.segmentsGone) deleted by retention meanwhile" }
                output.line(line)
                if let active = report.activeSegmentSkipped {
                    output.line("  \(active) left alone: the server appends to it; run wal rekey again once it is sealed")
                }
                if report.damagedRangesKept > 0 {
                    output.line(
                        "  \(counted(report.damagedRangesKept, "damaged range")) copied as they were (unreadable; they may hold bytes in the clear)")
                }
            }
            output.line("dead letters: \(deadLetters.letters) sealed with key \(keys.newest.id)")
            if !deadLetters.journalCleared {
                output.line("  forwarding.sqlite-wal still holds their old pages (the server was reading it); they leave at its next checkpoint")
            }
        }
        output.flush()
    }
}

/// What `wal rekey --json` prints: one report per directory rewritten, the log's first, and the
/// dead letters sealed again.
struct RekeyOutput: Encodable {
    /// The log's report, then each archive's.
    var directories: [LogRekey.Report]
    /// Dead letters whose values were in the clear or sealed with an older key.
    var deadLettersResealed: Int
    /// Whether `forwarding.sqlite-wal` was emptied of their old pages.
    var deadLetterJournalCleared: Bool
}

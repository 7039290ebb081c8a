import ArgumentParser
import Foundation
import Logging
import RelayEventJSON
import RelayForwarding
import RelayIO
import RelayLog
import RelayPostgres
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
            cannot read segments sealed with a key its file lacks (the command checks, and \
            refuses otherwise). Beside a running server, the command asks it to seal the segment \
            it appends to (POST /v1/wal/seal, with --admin-token) and rewrites that one too, so \
            only frames written after it are in the server's new active segment, already under \
            the newest key. Without a server the whole log is rewritten. Once every key but the newest has no frame left (`wal verify \
            --json` shows framesByKeyId), the older keys may leave the key file. The dead letters \
            of forwarding.sqlite are sealed with the newest key too. Exit status 0, or \
            1 with the segment that could not be rewritten (those before it are done).

            With --log-postgres-url, the rows of the stream of --relay-name in the log database \
            (serve --log-postgres-url) are sealed again instead, 256 per transaction (run it \
            again after an interruption); restart the relays appending to it with the new key \
            file first, since frames they append meanwhile are sealed with their own key.
            """
    )

    @Option(
        name: .customLong("archive-dir"),
        help: ArgumentHelp("Also rewrite the segments of this archive directory (--archive-dir of serve; repeatable).", valueName: "dir"))
    var archiveDirectories: [String] = []

    @Option(
        help: ArgumentHelp(
            "The admin token of the server holding the log, which seals its active segment for the rewrite (default: CAMPAIGN_RELAY_ADMIN_TOKEN).",
            valueName: "token"))
    var adminToken: String?

    @OptionGroup var storedLog: StoredLogOptions

    @OptionGroup var encryption: EncryptionOptions

    @OptionGroup var common: CommonOptions

    @OptionGroup var configFile: RelayConfigFileOption

    func validate() throws {
        guard encryption.encryptionKeyFile != nil else {
            throw ValidationError("--encryption-key-file is required: the file whose newest (last) key the segments are sealed with")
        }
        if archiveDirectories.contains(where: \.isEmpty) { throw ValidationError("--archive-dir must not be empty") }
        if storedLog.url != nil, !archiveDirectories.isEmpty {
            throw ValidationError("--archive-dir names segment files; a log in PostgreSQL (--log-postgres-url) keeps no archive: give one of them")
        }
    }

    func run() async throws {
        if storedLog.url == nil { try common.requireLog() }
        guard let keys = try await encryption.keyRing() else { return }
        if let (location, stream) = try await storedLog.named(dataDirectory: common.dataDir) {
            let json = common.json
            let report = try await BlockingExecutor(name: "wal-rekey").run { () throws(RuntimeFailure) -> LogRekey.Report in
                var progress = ProgressLine(enabled: !json)
                defer { progress.finish() }
                do {
                    return try PostgresLogRekey.rekey(stream: stream, location: location, keys: keys) { so in
                        progress.update(
                            "rekeying stream \(stream): \(so.segmentsRewritten) rows rewritten, \(so.segmentsCurrent) already under \(so.keyId)")
                    }
                } catch {
                    throw RuntimeFailure("rekeying stream \(stream) in \(location): \(error)")
                }
            }
            return try await finish(reports: [report], keys: keys, deadLettersIn: storedLog)
        }
        for archive in archiveDirectories { try await ArchiveDirectoryCheck.requireExisting(archive) }
        let layout = LogLayout(dataDirectory: common.dataDir)
        let walDirectory = layout.walDirectory
        let directories = [walDirectory] + archiveDirectories
        let json = common.json
        let logger = common.logger("campaign-relay.rekey")
        let io = BlockingExecutor(name: "wal-rekey")
        // Holding the log's lock, no server appends: its newest segment is rewritten too.
        let lock = try await io.run { () throws(RuntimeFailure) -> (any RelayLog.FileHandle)? in
            do throws(FileSystemError) {
                return try PosixFileSystem().lockExclusively(layout.lockFile)
            } catch  where error.errno == LogLayout.lockHeldErrno {
                return nil
            } catch {
                throw RuntimeFailure("cannot open the log's lock \(layout.lockFile): \(error)")
            }
        }
        defer { lock?.close() }
        let active = lock == nil ? try await sealServersSegment(keys: keys, logger: logger) : .none
        let reports = try await io.run { () throws(RuntimeFailure) -> [LogRekey.Report] in
            let fileSystem = PosixFileSystem()
            var progress = ProgressLine(enabled: !json)
            var reports: [LogRekey.Report] = []
            for directory in directories {
                do {
                    let report = try LogRekey.rekey(
                        directory: directory, walDirectory: walDirectory, keys: keys, leaving: directory == walDirectory ? active : .none,
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
        try await finish(reports: reports, keys: keys, deadLettersIn: storedLog)
    }

    /// Seals the dead letters with the newest key too (`forwarding.sqlite`'s, or the stream's in
    /// the log database), and prints what was done.
    private func finish(reports: [LogRekey.Report], keys: LogKeyRing, deadLettersIn storedLog: StoredLogOptions) async throws {
        let json = common.json
        var deadLetters = ForwardingStore.Reseal(letters: 0, journalCleared: true)
        if storedLog.url != nil || PosixFileSystem().exists(ForwardingStore.path(dataDirectory: common.dataDir)) {
            let (store, place) = try await storedLog.forwardingStore(dataDirectory: common.dataDir, keys: keys)
            do {
                deadLetters = try await store.resealDeadLetters()
            } catch {
                throw RuntimeFailure("sealing \(place): \(error)")
            }
        }
        var output = StandardOutput.output()
        if json {
            output.line(
                APIJSON.text(
                    RekeyOutput(directories: reports, deadLettersResealed: deadLetters.letters, deadLetterJournalCleared: deadLetters.journalCleared))
            )
        } else {
            for report in reports where report.directory.hasPrefix("stream ") {
                var line =
                    "\(report.directory): \(counted(report.segmentsRewritten, "row")) rewritten under key \(report.keyId) (\(counted(report.framesEncrypted, "frame")) encrypted, \(report.framesResealed) sealed again), \(report.segmentsCurrent) already under it"
                if report.damagedRangesKept > 0 { line += ", \(counted(report.damagedRangesKept, "damaged row")) left as they were" }
                output.line(line)
            }
            for report in reports where !report.directory.hasPrefix("stream ") {
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

extension WALRekeyCommand {
    /// Beside a running server: asks it to seal the segment it appends to (`POST /v1/wal/seal`),
    /// so that segment is rewritten too and the old key stops being needed, and checks that the
    /// server seals new frames with the key file's newest key (a server without it could not read
    /// what the rewrite seals). A server of a version without the endpoint keeps its active
    /// segment, as before.
    ///
    /// - Throws: ``RuntimeFailure`` when the server refuses (no admin token), cannot be reached,
    ///   or runs with another key.
    func sealServersSegment(keys: LogKeyRing, logger: Logger) async throws -> LogRekey.ActiveSegment {
        guard let record = ServerRecord.running(dataDirectory: common.dataDir) else {
            logger.notice("another process holds the log: the segment it appends to is left alone")
            return .newest
        }
        let handoff = ServerHandoff(record: record)
        let token = adminToken ?? UpstreamOptions.environment("CAMPAIGN_RELAY_ADMIN_TOKEN")
        let outcome = await handoff.exchange(.POST, path: "/v1/wal/seal", body: nil, token: token)
        await handoff.shutdown()
        let answer: (status: UInt, body: String)
        switch outcome {
        case .failure(let failure): throw RuntimeFailure("asking the server to seal its active segment: \(failure.description)")
        case .success(let received): answer = received
        }
        switch answer.status {
        case 200:
            break
        case 401, 403:
            throw RuntimeFailure(
                "\(handoff.name) holds the log and refused to seal its active segment for the rewrite (\(answer.status)): give wal rekey the server's admin token (--admin-token, or CAMPAIGN_RELAY_ADMIN_TOKEN)"
            )
        case 404:
            logger.notice("the server cannot seal its active segment (a version before POST /v1/wal/seal): it is left alone")
            return .newest
        default:
            throw RuntimeFailure("\(handoff.name) answered \(answer.status) to POST /v1/wal/seal: \(answer.body)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
            let boundary = (object["sealedBelow"] as? NSNumber)?.uint64Value
        else {
            throw RuntimeFailure("\(handoff.name) answered POST /v1/wal/seal with what this version cannot read: \(answer.body)")
        }
        let serverKey = object["keyId"] as? String
        guard serverKey == keys.newest.id else {
            throw RuntimeFailure(
                "\(handoff.name) seals new frames with \(serverKey.map { "key \($0)" } ?? "no key (it runs without --encryption-key-file)"), not with \(keys.newest.id), the newest of \(encryption.encryptionKeyFile ?? "the key file"): restart it with this key file first (nothing was rewritten)"
            )
        }
        logger.notice("the server sealed its active segment for the rewrite", metadata: ["sealed-below": "\(boundary)", "server": "\(record.url)"])
        return .startingAtOrAfter(boundary)
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

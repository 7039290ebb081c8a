import ArgumentParser
import Foundation
import RelayCore
import RelayEventJSON
import RelayForwarding
import RelayIO
import RelayLog
import RelayPostgres
import RelayPrivacy
import RelayServer

/// `campaign-relay erase`: erases a person's registrations from everything the relay keeps, or
/// lists the erasures done (`--list`).
struct EraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erase",
        abstract: "Erase a person's registrations (a privacy request) from the log, archives, dead letters, deduplication state and aggregates.",
        discussion: """
            Every registration of the push token (--registration-token) or of the user key \
            (--user-key), of one app with --integration-key, received before the request is \
            replaced in the log and in each --archive-dir by an erased entry that keeps its \
            sequence number; its dead letters and deduplication rows are deleted; the aggregates \
            count it no more and forget its token. Tracking hits carry no personal data and stay. \
            An erased registration not yet forwarded never will be. The answer says how many \
            were already sent to Campaign or a central relay, and when, so that the request can \
            be filed with Campaign's own privacy service too, and which edge relays handed them on. \
            Beside a running serve, the server does the erasure (POST /v1/privacy/erasures), with \
            the relay's admin token: --admin-token, CAMPAIGN_RELAY_ADMIN_TOKEN, or admin-token of \
            the --config file; without one, this command does, from the log and each --archive-dir \
            (with --config and no --archive-dir: the file's archive-dir). An \
            erasure interrupted at any point is finished by the next serve or erase. A relay that \
            counts into the fleet's PostgreSQL (serve --postgres-url) has its fleet counts and \
            token digests changed there too: give erase the same --postgres-url when no server \
            runs. Each is \
            recorded, without personal data, in <data-dir>/erasures.jsonl: --list shows them. \
            Exit status 0 when done, 1 when it failed (see docs/privacy.md).
            """
    )

    @Option(help: ArgumentHelp("Erase the registrations of this push token.", valueName: "token"))
    var registrationToken: String?

    @Option(help: ArgumentHelp("Erase the registrations of this user key (often an email address).", valueName: "key"))
    var userKey: String?

    @Option(help: ArgumentHelp("Only the registrations of this app (mobileAppUuid).", valueName: "key"))
    var integrationKey: String?

    @Flag(help: "Count what would be erased and change nothing.")
    var dryRun = false

    @Flag(help: "Show the erasures done (the audit log) instead.")
    var list = false

    @Option(
        name: .customLong("archive-dir"),
        help: ArgumentHelp("Also erase from the segments of this archive directory (--archive-dir of serve; repeatable).", valueName: "dir"))
    var archiveDirectories: [String] = []

    @Option(help: ArgumentHelp("The admin token of the running server (default: CAMPAIGN_RELAY_ADMIN_TOKEN).", valueName: "token"))
    var adminToken: String?

    @OptionGroup var encryption: EncryptionOptions

    @OptionGroup var postgres: PostgresOptions

    @OptionGroup var common: CommonOptions

    @OptionGroup var configFile: RelayConfigFileOption

    func validate() throws {
        if list {
            guard registrationToken == nil, userKey == nil, !dryRun else { throw ValidationError("--list takes no selector and no --dry-run") }
            return
        }
        guard (registrationToken == nil) != (userKey == nil) else { throw ValidationError("give exactly one of --registration-token and --user-key") }
        if registrationToken?.isEmpty == true || userKey?.isEmpty == true || integrationKey?.isEmpty == true {
            throw ValidationError("--registration-token, --user-key and --integration-key must not be empty")
        }
        if archiveDirectories.contains(where: \.isEmpty) { throw ValidationError("--archive-dir must not be empty") }
        if list, postgres.postgresUrl != nil { throw ValidationError("--list takes no --postgres-url") }
    }

    private var selector: ErasureSelector {
        ErasureSelector(registrationToken.map { .registrationToken($0) } ?? .userKey(userKey ?? ""), integrationKey: integrationKey)
    }

    func run() async throws {
        try common.requireDataDirectory()
        var output = StandardOutput.output()
        defer { output.flush() }
        if list {
            let records = try await ErasureAuditLog.records(dataDirectory: common.dataDir, on: BlockingExecutor(name: "erasure-audit"))
            if common.json {
                output.line(APIJSON.text(ErasureList(erasures: records)))
            } else if records.isEmpty {
                output.line("no erasure recorded in \(ErasureAuditLog.path(dataDirectory: common.dataDir))")
            } else {
                for record in records { output.line(Self.summary(record)) }
            }
            return
        }
        let report: ErasureReport
        if let server = ServerRecord.running(dataDirectory: common.dataDir) {
            report = try await handOff(to: server)
        } else {
            // A relay whose log is in PostgreSQL keeps no wal/ here: opening one would erase
            // nothing and say so, as if it were done.
            guard common.holdsLog else {
                throw RuntimeFailure(
                    "no log in \(common.dataDir) (no wal/ directory), and no serve runs on it: nothing was erased. A relay that keeps its log in PostgreSQL (serve --log-postgres-url) erases through its running serve: start it, then run erase again with its --data-dir and --admin-token"
                )
            }
            // The archives serve copies segments into by the file, unless --archive-dir names others.
            let archives = archiveDirectories.isEmpty ? try await configFile.archiveDirectories() : archiveDirectories
            for archive in archives { try await ArchiveDirectoryCheck.requireExisting(archive) }
            report = try await eraseHere(archives: archives)
        }
        if common.json {
            output.line(APIJSON.text(report))
        } else {
            output.line(Self.summary(report))
            if report.forwarded.toCampaign + report.forwarded.toCentralRelay > 0 {
                output.line(
                    "  already sent on: \(report.forwarded.toCampaign) to Campaign, \(report.forwarded.toCentralRelay) to a central relay (received \(report.forwarded.firstReceivedAt ?? "?") to \(report.forwarded.lastReceivedAt ?? "?")): file the request with Campaign's privacy service too"
                )
            }
            if !report.originRelays.isEmpty {
                output.line("  handed on by the relays \(report.originRelays.joined(separator: ", ")): run the same erase there")
            }
            // On the log in PostgreSQL, the streams the server forwards for relays that stopped.
            for adopted in report.adoptedStreams ?? [] {
                output.line("  adopted \(adopted.rewrites.first?.directory ?? "stream"): " + Self.summary(adopted))
            }
        }
    }

    /// The erasure done by this process, which opens the log (no server holds it), from the log
    /// and `archives`.
    private func eraseHere(archives: [String]) async throws -> ErasureReport {
        var configuration = LogConfiguration()
        configuration.encryption = try await encryption.keyRing()
        // Not a consumer, and blind to the server's retention: it deletes no segment on closing.
        configuration.retention = .keepingEverything
        let logger = common.logger("campaign-relay.erase")
        let log = try await WriteAheadLog.open(dataDirectory: common.dataDir, configuration: configuration, logger: logger)
        let store: ForwardingStore
        do {
            store = try await ForwardingStore(dataDirectory: common.dataDir, keys: configuration.encryption)
        } catch {
            await log.close()
            throw RuntimeFailure("opening \(ForwardingStore.path(dataDirectory: common.dataDir)): \(error)")
        }
        let location: PostgresLocation?
        do {
            location = try postgres.location()
        } catch {
            await log.close()
            throw error
        }
        let fleet = location.map { PersonalDataErasure.directFleetStep(location: $0, relayID: log.identity.relayID, logger: logger) }
        let erasure = PersonalDataErasure(
            log: log, dataDirectory: common.dataDir, archiveDirectories: archives, store: store, aggregator: nil, fleet: fleet,
            logger: logger)
        do {
            let report = try await erasure.erase(selector, dryRun: dryRun)
            await log.close()
            return report
        } catch {
            await log.close()
            throw RuntimeFailure("erasing: \(error)")
        }
    }

    /// The erasure done by the running server.
    private func handOff(to record: ServerRecord) async throws -> ErasureReport {
        // A directory that does not exist is a typo whichever process erases: said first.
        for archive in archiveDirectories { try await ArchiveDirectoryCheck.requireExisting(archive) }
        // The server erases from its own archive, so naming that one is what the docs ask for.
        let others = archiveDirectories.filter { ServerRecord.canonical($0) != record.archiveDirectory }
        if !others.isEmpty {
            let own = record.archiveDirectory.map { "its own --archive-dir, \($0)" } ?? "its own --archive-dir (it has none)"
            throw RuntimeFailure(
                "the server (pid \(record.pid)) at \(record.url) holds the log and erases from \(own): stop it to erase from \(others.joined(separator: ", ")) too"
            )
        }
        let handoff = ServerHandoff(record: record)
        var body: [String: Any] = [registrationToken == nil ? "userKey" : "registrationToken": registrationToken ?? userKey ?? ""]
        if let integrationKey { body["integrationKey"] = integrationKey }
        if dryRun { body["dryRun"] = true }
        let text = String(decoding: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]), as: UTF8.self)
        let token = adminToken ?? UpstreamOptions.environment("CAMPAIGN_RELAY_ADMIN_TOKEN")
        switch await handoff.exchange(.POST, path: "/v1/privacy/erasures", body: text, token: token) {
        case .failure(let failure):
            await handoff.shutdown()
            throw failure
        case .success(let answer):
            await handoff.shutdown()
            guard answer.status == 200 else {
                throw Self.refusal(by: handoff.name, status: answer.status, body: answer.body, tokenGiven: token != nil)
            }
            do {
                return try JSONDecoder().decode(ErasureReport.self, from: Data(answer.body.utf8))
            } catch {
                throw RuntimeFailure("\(handoff.name) answered an erasure this version cannot read (\(error)): \(answer.body)")
            }
        }
    }

    /// What to say when the server refused the erasure: for its admin token (401 without one, or
    /// with another; 403 with a tenant's), what `erase` itself takes, since the server's own words
    /// name `serve`'s option; for anything else, the server's answer.
    static func refusal(by server: String, status: UInt, body: String, tokenGiven: Bool) -> RuntimeFailure {
        let how =
            "give erase the relay's admin token, the one serve runs with: --admin-token TOKEN, CAMPAIGN_RELAY_ADMIN_TOKEN, or admin-token in the file of --config (top level or [serve])"
        switch status {
        case 401 where !tokenGiven:
            return RuntimeFailure(
                "\(server) holds the data directory, so it does the erasure, and it requires its admin token; none was given: \(how)")
        case 401:
            return RuntimeFailure("\(server) refused the admin token given: it is not the one the server runs with; \(how)")
        case 403:
            return RuntimeFailure(
                "\(server) refused the admin token given: it is a tenant's (admin-token of [tenant.NAME]), which sees its tenant alone and cannot erase; \(how)"
            )
        default:
            return RuntimeFailure("\(server) answered \(status): \(body)")
        }
    }

    /// One line per erasure, as a person reads it: how many registrations, and where their entries
    /// were (the log, then each archive), the dead letters and deduplication rows; a dry run says
    /// what it would erase, and that it changed nothing.
    static func summary(_ report: ErasureReport) -> String {
        // The log's directory comes first, then each archive's (PersonalDataErasure).
        let places = report.rewrites.enumerated().compactMap { index, rewrite -> String? in
            guard rewrite.entriesErased > 0 else { return nil }
            return "\(counted(rewrite.entriesErased, "entry", "entries")) in " + (index == 0 ? "the log" : "the archive \(rewrite.directory)")
        }
        let found = "\(counted(report.registrations, "registration"))" + (places.isEmpty ? "" : " (\(places.joined(separator: ", ")))")
        let head = "\(report.id) \(report.requestedAt) \(report.selector.kind) \(report.selector.hash): "
        guard report.dryRun else {
            return head
                + "erased \(found), \(counted(report.deadLetters, "dead letter")), \(counted(report.deduplicationRecords, "deduplication row")); \(report.notYetForwarded) not yet forwarded"
        }
        return head
            + "would erase \(found) and \(counted(report.deadLetters, "dead letter")), with their deduplication rows and counts; \(report.notYetForwarded) not yet forwarded; dry run: nothing was changed"
    }
}

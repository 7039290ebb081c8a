import ArgumentParser
import RelayCore
import RelayEventJSON
import RelayForwarding
import RelayLog
import RelayServer

/// `campaign-relay deadletter`: shows and re-queues events the Campaign hosts rejected.
struct DeadLetterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deadletter",
        abstract: "Show or re-queue events the Campaign hosts rejected permanently.",
        subcommands: [DeadLetterListCommand.self, DeadLetterRetryCommand.self]
    )
}

/// `campaign-relay deadletter list`: the dead letters, each with its tenant, as a table or JSON.
struct DeadLetterListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List dead letters, oldest first, each with its tenant.",
        discussion: """
            --tenant NAME lists one tenant's alone (`default`: the tenant without a path prefix); \
            with --config, NAME must be a tenant the file declares ([tenant.NAME]). A relay on the log in \
            PostgreSQL keeps its dead letters there: give --log-postgres-url (and --relay-name for \
            another relay's, one whose disk is gone for instance).
            """)

    @Flag(name: .long, help: "Include dead letters already re-queued.")
    var all = false

    @Option(
        name: .long,
        help: ArgumentHelp("Only this tenant's dead letters (`default`: the tenant without a path prefix).", valueName: "name"))
    var tenant: String?

    /// `--tenant`, read.
    private var selection: TenantSelection {
        get throws { try TenantSelection.option(tenant) }
    }

    @Option(name: .long, help: ArgumentHelp("Show at most this many.", valueName: "n"))
    var limit: Int?

    @Flag(
        name: .long,
        help:
            "With --json: show registrations' personal data (push token, user key, device IMEI, name and model, parameter values) instead of keyed hashes."
    )
    var revealPersonalData = false

    @OptionGroup var storedLog: StoredLogOptions

    @OptionGroup var encryption: EncryptionOptions

    @OptionGroup var common: CommonOptions

    @OptionGroup var configFile: RelayConfigFileOption

    func validate() throws {
        if revealPersonalData, !common.json { throw ValidationError("--reveal-personal-data only applies with --json (the table shows no event)") }
        if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
        _ = try selection
    }

    func run() async throws {
        let selection = try selection
        if case .only(let name?) = selection, configFile.path != nil {
            try Self.requireDeclared(name, among: try await configFile.tenants(), path: configFile.path ?? "")
        }
        try common.requireDataDirectory()
        let (store, place) = try await storedLog.forwardingStore(dataDirectory: common.dataDir, keys: try await encryption.keyRing())
        let letters: [DeadLetter]
        do {
            letters = try await store.deadLetters(tenant: selection, includeRequeued: all, limit: limit)
        } catch {
            throw RuntimeFailure("reading \(place): \(error)")
        }
        var output = StandardOutput.output()
        if common.json {
            let redaction: Pseudonymizer?
            do {
                redaction = revealPersonalData ? nil : try await store.pseudonymizer()
            } catch {
                throw RuntimeFailure("dead letters are not shown without their personal data hidden: \(error)")
            }
            output.line(APIJSON.text(DeadLetterList(letters, redaction: redaction)))
        } else if letters.isEmpty {
            output.line("no dead letters")
            if storedLog.url == nil, !common.holdsLog {
                // No wal/: maybe a relay whose log, and dead letters, are in PostgreSQL.
                common.logger("campaign-relay.deadletter").notice(
                    "no dead letters in \(place), and no log beside it: a relay that keeps its log in PostgreSQL keeps its dead letters there; give --log-postgres-url"
                )
            }
        } else {
            let pseudonymizer: Pseudonymizer
            do {
                pseudonymizer = try await store.pseudonymizer()
            } catch {
                throw RuntimeFailure("dead letters are not shown without their personal data hidden: \(error)")
            }
            output.write(
                TextTable.render(
                    header: ["id", "sequence", "tenant", "status", "dead-lettered at", "url", "reason", "answer"],
                    rows: letters.map { letter in
                        let hide = { (text: String) in letter.hidingPersonalData(in: text, by: pseudonymizer) }
                        let answer = hide(letter.responseBody).replacing("\n", with: " ")
                        return [
                            "\(letter.id)", "\(letter.sequence)", letter.tenant, "\(letter.status)",
                            letter.deadLetteredAt + (letter.requeued != nil ? " (re-queued)" : ""),
                            hide(letter.url), String(hide(letter.reason).prefix(60)), String(answer.prefix(60)),
                        ]
                    },
                    rightAligned: [0, 1, 3]
                )
            )
        }
        output.flush()
    }

    /// Fails unless `name` is a tenant of the file at `path` (whose tenants are `declared`): a
    /// misspelt name would list nothing, as if its tenant had no dead letter.
    static func requireDeclared(_ name: TenantName, among declared: [TenantTable], path: String) throws {
        guard !declared.contains(where: { $0.name == name }) else { return }
        // As the server words an unknown tenant's path (TenantDirectory).
        let known = declared.isEmpty ? "it declares none" : "it declares " + declared.map(\.name.text).joined(separator: ", ")
        throw RuntimeFailure(
            "no tenant \(JSONText.quoted(name.text)) on this relay: tenants are [tenant.NAME] tables of \(path) (\(known)); `default` names the tenant without a path prefix"
        )
    }
}

struct DeadLetterRetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Append dead letters to the log again, so the uploader sends them anew.",
        discussion:
            "Each one gets a new sequence number and keeps its original event time and identity (the aggregates count it once). Next to a running `serve`, they are handed to it. With --log-postgres-url, the dead letters are those of stream --relay-name in the log database, and they are handed to the `serve` running on --data-dir (any relay of that database: one whose disk is gone can have its letters re-queued by another)."
    )

    @Option(name: .long, parsing: .upToNextOption, help: ArgumentHelp("Dead letters to re-queue.", valueName: "id"))
    var id: [Int64] = []

    @Flag(name: .long, help: "Re-queue every dead letter not re-queued yet.")
    var all = false

    @OptionGroup var storedLog: StoredLogOptions
    @OptionGroup var retention: RetentionOptions
    @OptionGroup var common: CommonOptions
    @OptionGroup var configFile: RelayConfigFileOption

    func validate() throws {
        guard all != !id.isEmpty else { throw ValidationError("give --id N… or --all") }
    }

    func run() async throws {
        try common.requireDataDirectory()
        let running = ServerRecord.running(dataDirectory: common.dataDir)
        // A log in PostgreSQL is appended to by its serve alone; and with no wal/ here, opening
        // one would append to a file log that nothing forwards.
        if storedLog.url != nil, running == nil {
            throw RuntimeFailure(
                "no serve runs on \(common.dataDir): the dead letters of the log in PostgreSQL are re-queued through a running serve. Start serve on --data-dir, or give the --data-dir of a relay of the same log database that runs; nothing was re-queued"
            )
        }
        let (store, place) = try await storedLog.forwardingStore(dataDirectory: common.dataDir, keys: try await retention.encryption.keyRing())
        let pending: [DeadLetter]
        do {
            pending = try await store.deadLetters(includeRequeued: false)
        } catch {
            throw RuntimeFailure("reading \(place): \(error)")
        }
        let chosen = all ? pending : pending.filter { id.contains($0.id) }
        if !all {
            let missing = Set(id).subtracting(chosen.map(\.id))
            if !missing.isEmpty {
                throw RuntimeFailure(
                    "no pending dead letter with id \(missing.sorted().map(String.init).joined(separator: ", ")) in \(place); see campaign-relay deadletter list"
                )
            }
        }
        if storedLog.url == nil, !common.holdsLog {
            throw RuntimeFailure(
                "no log in \(common.dataDir) (no wal/ directory); nothing was re-queued. A relay that keeps its log in PostgreSQL keeps its dead letters there: give --log-postgres-url, with the --data-dir of a running serve"
            )
        }
        let logger = common.logger("campaign-relay.deadletter")
        // A `serve` holding the data directory takes the events through its API instead.
        let log: WriteAheadLog?
        let handoff: ServerHandoff?
        if storedLog.url != nil, let running {
            log = nil
            handoff = ServerHandoff(record: running)
            logger.notice("handing the events to the running server", metadata: ["server": "\(running.url)", "pid": "\(running.pid)"])
        } else {
            do {
                log = try await WriteAheadLog.open(dataDirectory: common.dataDir, configuration: try await retention.applied(), logger: logger)
                handoff = nil
            } catch {
                guard let server = ServerHandoff.server(holding: common.dataDir, after: error) else { throw error }
                log = nil
                handoff = ServerHandoff(record: server)
                logger.notice(
                    "the log is held by a running server; handing the events to it", metadata: ["server": "\(server.url)", "pid": "\(server.pid)"])
            }
        }
        var requeued: [(Int64, UInt64)] = []
        do {
            for letter in chosen {
                var event = try EventDecoder.decode(letter.eventJSON, defaultTime: EventTime.now())
                // The copy keeps the identity of the entry it replaces: counted once, as that entry.
                if event.origin == nil { event.origin = EventOrigin(sequence: letter.sequence) }
                let sequence: UInt64
                if let log {
                    sequence = try await log.append([event]).lowerBound
                } else if let handoff {
                    switch await handoff.send([event]) {
                    case .stored(let range): sequence = range.lowerBound
                    case .refused(let problems):
                        throw RuntimeFailure("\(handoff.name) refused dead letter \(letter.id): \(problems.first?.message ?? "")")
                    case .failed(let message): throw RuntimeFailure(message)
                    }
                } else {
                    break
                }
                try await store.markRequeued(id: letter.id, sequence: sequence)
                requeued.append((letter.id, sequence))
            }
        } catch {
            await log?.close()
            await handoff?.shutdown()
            throw error
        }
        await log?.close()
        await handoff?.shutdown()
        var output = StandardOutput.output()
        if common.json {
            output.line(APIJSON.text(Requeued(requeued: requeued.map { Requeued.Letter(id: $0.0, sequence: $0.1) })))
        } else {
            output.line(
                "re-queued \(counted(requeued.count, "dead letter"))"
                    + (requeued.isEmpty ? "" : " as sequences \(requeued.map { String($0.1) }.joined(separator: ", "))"))
        }
        output.flush()
    }
}

/// `deadletter retry --json`: `{"requeued":[{"id":…,"sequence":…}]}`, each letter and the sequence
/// it was appended with.
struct Requeued: Encodable {
    struct Letter: Encodable {
        var id: Int64
        var sequence: UInt64
    }

    var requeued: [Letter]
}

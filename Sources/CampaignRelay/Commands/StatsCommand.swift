import ArgumentParser
import Foundation
import Logging
import RelayAggregates
import RelayAggregator
import RelayCore
import RelayEventJSON
import RelayLog
import RelayPostgres
import RelayServer

/// `campaign-relay stats`: prints the aggregates.
struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Print impressions, opens and clicks per delivery, and registrations per app.",
        discussion: """
            Brings aggregates.sqlite up to date with the log first (as `aggregate` does), unless a \
            running `serve` holds the log: it counts continuously, and stats says how far it has \
            got ("aggregated through sequence N of M stored"). Totals count every \
            hit; unique counts count distinct messages (the SDKs may send a hit twice). Deliveries are \
            sorted by last activity. A central relay (one that takes batches from other relays, \
            serve --relay-token) also lists the events per origin relay: the relay that took them \
            from the SDKs, and in a chain of three or more the relay they came through.

            Counts are kept per tenant: the same delivery id under two tenants is two deliveries, \
            each row names its tenant (`default` for the hosts of the relay's own options), and \
            --tenant NAME shows one tenant alone (`--tenant default` the default one). Events per \
            origin relay are shown only without --tenant: they count relays, not a tenant's events.

            --rebuild drops the aggregates and recomputes them from the log, with progress; it \
            refuses when the log no longer starts at sequence 1 (older segments deleted) unless \
            --allow-partial is given, or --from-archive names an archive holding the older \
            segments (it must reach the log's first kept sequence).

            With --postgres-url it prints the fleet's counts instead: every relay that counts into \
            that database (aggregate or serve with the same --postgres-url), summed per delivery \
            and app, unique counts fleet-wide, and each relay's position. It reads only; this \
            relay's own events are there as far as its aggregator has got (listed under relays).
            """
    )

    @OptionGroup var postgres: PostgresOptions

    @Option(name: .long, help: ArgumentHelp("Only this delivery.", valueName: "id"))
    var delivery: String?

    @Option(name: .long, help: ArgumentHelp("Show at most this many deliveries.", valueName: "n"))
    var limit: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("Only this tenant's deliveries and registrations (`default`: the tenant without a path prefix).", valueName: "name"))
    var tenant: String?

    /// `--tenant`, read.
    private var selection: TenantSelection {
        get throws { try TenantSelection.option(tenant) }
    }

    @Flag(name: .long, help: "Recompute the aggregates from the log first.")
    var rebuild = false

    @Flag(name: .long, help: "With --rebuild: accept a log that no longer starts at sequence 1.")
    var allowPartial = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --rebuild: read the segments the log no longer has from this archive (--archive-dir, `wal archive`) first.",
            valueName: "dir"))
    var fromArchive: String?

    @Flag(name: .long, help: "Print the counts as they are, without counting new events first (the output says how far they go).")
    var noCatchUp = false

    @OptionGroup var retention: RetentionOptions
    @OptionGroup var common: CommonOptions
    @OptionGroup var configFile: ConfigFileOption

    func validate() throws {
        if allowPartial, !rebuild { throw ValidationError("--allow-partial only applies with --rebuild") }
        if fromArchive != nil, !rebuild { throw ValidationError("--from-archive only applies with --rebuild") }
        if noCatchUp, rebuild { throw ValidationError("--no-catch-up and --rebuild contradict each other: give one") }
        if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
        _ = try selection
    }

    func run() async throws {
        let logger = common.logger("campaign-relay.stats")
        if let database = try postgres.location() {
            guard !rebuild else {
                throw ValidationError(
                    "--rebuild recomputes aggregates.sqlite; the fleet's counts in PostgreSQL are kept exact by each relay's aggregator")
            }
            return try await printFleet(database, logger: logger)
        }
        var errors = StandardOutput.error()
        try common.requireDataDirectory()
        // The counts are brought up to date first when this process can have the log; a server
        // holding it counts continuously, and the output says how far.
        let log: WriteAheadLog?
        var server: ServerRecord?
        do {
            // A rebuild moves the aggregator's cursor to its end; a catch-up moves no cursor, since
            // a consumer that has not run yet (the first upload) still needs the segments.
            log =
                noCatchUp
                ? nil
                : try await WriteAheadLog.open(
                    dataDirectory: common.dataDir, configuration: try await retention.applied(), consumers: rebuild ? [Aggregator.consumer] : [],
                    logger: logger)
        } catch {
            guard let running = ServerHandoff.server(holding: common.dataDir, after: error) else { throw error }
            if rebuild { throw RuntimeFailure("the server (pid \(running.pid)) at \(running.url) holds the log: stop it to rebuild the aggregates") }
            log = nil
            server = running
        }
        if let log {
            do {
                let progress = ProgressLine.aggregationReporter(enabled: !common.json)
                if rebuild {
                    if let fromArchive { try await ArchiveDirectoryCheck.requireExisting(fromArchive) }
                    let summary = try await Aggregator.rebuild(
                        log: log, dataDirectory: common.dataDir, archiveDirectory: fromArchive, allowPartial: allowPartial, logger: logger,
                        progress: progress)
                    if !common.json { errors.line("rebuilt: \(summary.text)") }
                } else {
                    // Counting only: segments stay for consumers that have not run yet.
                    let aggregator = try await Aggregator(log: log, dataDirectory: common.dataDir, movesLogCursor: false, logger: logger)
                    let summary = try await aggregator.catchUp(progress: progress)
                    await aggregator.close()
                    if !common.json, summary.events > 0 { errors.line("brought the counts up to date: \(summary.text)") }
                }
            } catch {
                await log.close()
                throw error
            }
            await log.close()
        }
        let path = Aggregator.databasePath(dataDirectory: common.dataDir)
        if let server, !server.aggregates, !FileManager.default.fileExists(atPath: path) {
            throw RuntimeFailure(
                "the server (pid \(server.pid)) at \(server.url) runs with --no-aggregates and no counts were kept: restart it without --no-aggregates, or stop it and run stats"
            )
        }
        let queries: AggregateQueries
        do {
            queries = try await AggregateQueries(path: path)
        } catch {
            errors.line("error: \(error)")
            errors.flush()
            throw ExitCode(1)
        }
        try await requireKnownTenant(counted: try await queries.countedTenants())
        let snapshot = try await queries.report(tenant: try selection, deliveryId: delivery, limit: limit, everything: delivery == nil)
        let (covered, deliveries, registrations, origins) = (snapshot.sequences, snapshot.deliveries, snapshot.registrations, snapshot.origins)
        var lag: (server: ServerRecord, lastDurable: UInt64)?
        if let server {
            let handoff = ServerHandoff(record: server)
            if let last = await handoff.lastDurableSequence() { lag = (server, last) }
            await handoff.shutdown()
        }
        var output = StandardOutput.output()
        if common.json {
            output.line(
                APIJSON.text(
                    StatsOutput(report: snapshot, server: lag.map { StatsOutput.Server(record: $0.server, lastDurableSequence: $0.lastDurable) })))
        } else {
            if let lag {
                output.line(
                    "aggregated through sequence \(covered.upperBound - 1) of \(lag.lastDurable) stored; the server (pid \(lag.server.pid)) at \(lag.server.url) counts continuously"
                )
            }
            output.write(Self.table(covered: covered, deliveries: deliveries, registrations: registrations, origins: origins))
        }
        output.flush()
        errors.flush()
        if let delivery, deliveries.isEmpty {
            errors.line("no events counted for delivery \(JSONText.quoted(delivery))")
            errors.flush()
            throw ExitCode(1)
        }
    }

    /// Refuses `--tenant NAME` when no file declares NAME and no counts name it (a misspelt or
    /// unknown tenant would otherwise show as a tenant with nothing counted). A tenant removed from
    /// the file keeps its counts, so counts alone make it known.
    private func requireKnownTenant(counted: [String]) async throws {
        guard case .only(let tenant?) = try selection else { return }
        let declared = try await configFile.tenants().map(\.name.text)
        guard !declared.contains(tenant.text), !counted.contains(tenant.text) else { return }
        let file = configFile.path.map { path in
            declared.isEmpty ? "\(path) declares no tenant" : "\(path) declares \(declared.joined(separator: ", "))"
        }
        let counts = counted.isEmpty ? "nothing is counted yet" : "counts name \(counted.joined(separator: ", "))"
        throw RuntimeFailure(
            "--tenant \(tenant.text): no such tenant: \(file.map { $0 + "; " } ?? "")\(counts) (`default` is the tenant without a path prefix)"
                + (configFile.path == nil ? "; give --config to check it against the tenants your configuration declares" : ""))
    }

    /// `--postgres-url`: the fleet's counts.
    private func printFleet(_ database: PostgresLocation, logger: Logger) async throws {
        let delivery = self.delivery
        let limit = self.limit
        let report: FleetReport
        let selection = try self.selection
        do {
            report = try await FleetQueries(location: database, logger: logger).report(tenant: selection, deliveryId: delivery, limit: limit)
        } catch {
            throw RuntimeFailure(
                "reading the fleet's counts from \(database): \(error); check that PostgreSQL runs and that a relay has counted into it")
        }
        // The report holds the selected tenant's rows alone: any row makes it a counted tenant.
        try await requireKnownTenant(counted: Set(report.deliveries.map(\.tenant) + report.registrations.map(\.tenant)).sorted())
        var output = StandardOutput.output()
        if common.json {
            output.line(APIJSON.text(report))
        } else {
            var text = "fleet counts from \(database), \(report.relays.count) relay(s)\n\n"
            text += Self.table(covered: nil, deliveries: report.deliveries, registrations: report.registrations, origins: [])
            text += "\n"
            text += TextTable.render(
                header: ["relay", "epoch", "counted through sequence", "events", "last commit"],
                rows: report.relays.map { [$0.relayId, "\($0.epoch)", "\($0.nextSequence - 1)", "\($0.events)", $0.updatedAt.rfc3339] },
                rightAligned: [1, 2, 3])
            output.write(text)
        }
        output.flush()
        if let delivery, report.deliveries.isEmpty {
            var errors = StandardOutput.error()
            errors.line("no events counted for delivery \(JSONText.quoted(delivery)) in the fleet")
            errors.flush()
            throw ExitCode(1)
        }
    }

    /// The text of `stats`: a column per metric of `metrics` (``MetricTable``), in table order,
    /// headed by its label.
    static func table(
        covered: Range<UInt64>?, deliveries: [DeliveryCounts], registrations: [RegistrationCounts], origins: [OriginCounts],
        metrics: MetricTable = .standard
    ) -> String {
        var text = covered.map { "aggregated log sequences \($0.lowerBound) to \($0.upperBound - 1)\n\n" } ?? ""
        // A relay of the default tenant alone prints what it always printed; with tenants, each
        // row's comes first.
        let showsTenants =
            deliveries.contains { $0.tenant != TenantName.defaultTenantText } || registrations.contains { $0.tenant != TenantName.defaultTenantText }
        let deliveryRows = deliveries.map { row in
            (showsTenants ? [row.tenant] : []) + [row.deliveryId] + metrics.perDelivery.map { "\(row[$0.name])" } + [
                row.firstEvent.rfc3339, row.lastEvent.rfc3339,
            ]
        }
        let shift = showsTenants ? 1 : 0
        text += TextTable.render(
            header: (showsTenants ? ["tenant"] : []) + ["delivery"] + metrics.perDelivery.map(\.label) + ["first event", "last event"],
            rows: deliveryRows, rightAligned: Set((1 + shift)..<(1 + shift + metrics.perDelivery.count))
        )
        if deliveries.isEmpty { text += "(no tracking events counted)\n" }
        if !registrations.isEmpty {
            text += "\n"
            text += TextTable.render(
                header: (showsTenants ? ["tenant"] : []) + ["integration key", "platform"] + metrics.perApp.map(\.label) + [
                    "first event", "last event",
                ],
                rows: registrations.map { row in
                    (showsTenants ? [row.tenant] : []) + [row.integrationKey, row.platform.rawValue] + metrics.perApp.map { "\(row[$0.name])" } + [
                        row.firstEvent.rfc3339, row.lastEvent.rfc3339,
                    ]
                },
                rightAligned: Set((2 + shift)..<(2 + shift + metrics.perApp.count))
            )
        }
        if !origins.isEmpty {
            text += "\nhanded on by other relays (first origin; via: the relay in between, in a chain)\n"
            text += TextTable.render(
                header: ["origin relay", "via", "events", "hits", "registrations", "epoch", "up to origin seq.", "first event", "last event"],
                rows: origins.map {
                    [
                        $0.relayId, $0.via ?? "-", "\($0.events)", "\($0.hits)", "\($0.registrations)", "\($0.epoch)", "\($0.lastSequence)",
                        $0.firstEvent.rfc3339, $0.lastEvent.rfc3339,
                    ]
                },
                rightAligned: Set(2...6)
            )
        }
        return text
    }
}

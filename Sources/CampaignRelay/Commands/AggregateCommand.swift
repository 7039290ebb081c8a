import ArgumentParser
import RelayAggregator
import RelayEventJSON
import RelayLog
import RelayPostgres
import RelayServer

/// `campaign-relay aggregate`: catches the aggregates up with the log, then exits.
struct AggregateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aggregate",
        abstract: "Count every logged event into aggregates.sqlite, or the fleet's PostgreSQL (exactly once), then exit.",
        discussion: """
            For jobs: catches up with the log and exits; `campaign-relay serve` does the same \
            continuously. Safe to kill at any moment: counts and the log position are committed \
            together, so the next run neither loses nor double-counts an event. Needs the log to \
            itself (not while a server runs on the same --data-dir).

            With --postgres-url the counts go to the fleet's PostgreSQL instead of \
            aggregates.sqlite: this relay's rows, beside every other relay's, with its position in \
            the same transactions (docs/aggregates-postgres.md). The schema is created or migrated \
            on the way, safely when many relays start at once.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Events per transaction (default 50000 for SQLite, 20000 for PostgreSQL).", valueName: "n"))
    var batchSize: Int?

    @OptionGroup var postgres: PostgresOptions

    @OptionGroup var retention: RetentionOptions
    @OptionGroup var common: CommonOptions
    @OptionGroup var configFile: ConfigFileOption

    func validate() throws {
        if let batchSize, batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
    }

    func run() async throws {
        let logger = common.logger("campaign-relay.aggregate")
        let database = try postgres.location()
        let log: WriteAheadLog
        do {
            log = try await WriteAheadLog.open(
                dataDirectory: common.dataDir, configuration: try await retention.applied(),
                consumers: [database == nil ? Aggregator.consumer : FleetAggregator.consumer], logger: logger)
        } catch {
            guard let server = ServerHandoff.server(holding: common.dataDir, after: error) else { throw error }
            guard server.aggregates else {
                throw RuntimeFailure(
                    "the server (pid \(server.pid)) at \(server.url) holds the log and runs with --no-aggregates: stop it to aggregate, or restart it without --no-aggregates"
                )
            }
            var output = StandardOutput.output()
            output.line(
                common.json
                    ? #"{"aggregatedBy":"server","pid":\#(server.pid),"url":"\#(server.url)"}"#
                    : "the server (pid \(server.pid)) at \(server.url) is already aggregating this log; nothing to do (campaign-relay stats shows the counts)"
            )
            output.flush()
            return
        }
        let summary: CatchUpSummary
        do {
            let progress = ProgressLine.aggregationReporter(enabled: !common.json)
            if let database {
                let size = batchSize ?? 20_000
                summary = try await database.connectedSession(timeout: FleetAggregator.operationTimeout(batchSize: size), logger: logger) {
                    connection, watch in
                    let aggregator = try await FleetAggregator(connection: connection, watch: watch, log: log, batchSize: size, logger: logger)
                    let summary = try await aggregator.catchUp(progress: progress)
                    await aggregator.close()
                    return summary
                }
            } else {
                let aggregator = try await Aggregator(log: log, dataDirectory: common.dataDir, batchSize: batchSize ?? 50_000, logger: logger)
                summary = try await aggregator.catchUp(progress: progress)
                await aggregator.close()
            }
        } catch {
            await log.close()
            throw error
        }
        await log.close()
        var output = StandardOutput.output()
        output.line(common.json ? summary.json : summary.text)
        output.flush()
    }
}

extension CatchUpSummary {
    var text: String {
        if events == 0, skippedSequences == 0 { return "nothing to aggregate: every event up to sequence \(endPosition - 1) is already counted" }
        return
            "aggregated \(counted(events, "event")) (sequences \(startPosition) to \(endPosition - 1 < startPosition ? startPosition : endPosition - 1)) in \(counted(transactions, "transaction")), \(String(format2: seconds)) s"
            + (RateText.events(events, seconds: seconds).map { " (\($0))" } ?? "")
            + (skippedSequences > 0 ? "; \(counted(skippedSequences, "sequence number")) skipped (damaged or missing in the log)" : "")
    }

    var json: String { APIJSON.text(self) }
}

extension ProgressLine {
    /// A progress callback for aggregation runs, drawing on standard error when it is a terminal.
    static func aggregationReporter(enabled: Bool) -> (@Sendable (CatchUpProgress) -> Void)? {
        guard enabled, StandardOutput.error().isTerminal else { return nil }
        let line = ProgressBox()
        return { progress in
            let total = max(progress.end, 1) - 1
            let rate = RateText.events(progress.events, seconds: progress.seconds).map { ", " + $0 } ?? ""
            line.update("aggregating: sequence \(progress.position - 1) of \(total), \(counted(progress.events, "event"))\(rate)")
        }
    }
}

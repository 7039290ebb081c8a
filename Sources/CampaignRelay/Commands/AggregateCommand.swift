import ArgumentParser
import RelayAggregator
import RelayLog
import RelayServer

/// `campaign-relay aggregate`: catches the aggregates up with the log, then exits.
struct AggregateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aggregate",
        abstract: "Count every logged event into aggregates.sqlite (exactly once), then exit.",
        discussion: """
            For jobs: catches up with the log and exits; `campaign-relay serve` does the same \
            continuously. Safe to kill at any moment: counts and the log position are committed \
            together, so the next run neither loses nor double-counts an event. Needs the log to \
            itself (not while a server runs on the same --data-dir).
            """
    )

    @Option(name: .long, help: ArgumentHelp("Events per SQLite transaction.", valueName: "n"))
    var batchSize: Int = 50_000

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard batchSize >= 1 else { throw ValidationError("--batch-size must be at least 1") }
    }

    func run() async throws {
        let logger = common.logger("campaign-relay.aggregate")
        let log: WriteAheadLog
        do {
            log = try await WriteAheadLog.open(dataDirectory: common.dataDir, logger: logger)
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
        let summary: AggregationSummary
        do {
            let aggregator = try await Aggregator(log: log, dataDirectory: common.dataDir, batchSize: batchSize, logger: logger)
            summary = try await aggregator.catchUp(progress: ProgressLine.aggregationReporter(enabled: !common.json))
            await aggregator.close()
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

extension AggregationSummary {
    var text: String {
        if events == 0, skippedSequences == 0 { return "nothing to aggregate: every event up to sequence \(endPosition - 1) is already counted" }
        return
            "aggregated \(events) events (sequences \(startPosition) to \(endPosition - 1 < startPosition ? startPosition : endPosition - 1)) in \(transactions) transactions, \(String(format2: seconds)) s (\(Int(eventsPerSecond)) events/s)"
            + (skippedSequences > 0 ? "; \(skippedSequences) sequence numbers skipped (damaged or missing in the log)" : "")
    }

    var json: String { APIJSON.text(self) }
}

extension ProgressLine {
    /// A progress callback for aggregation runs, drawing on standard error when it is a terminal.
    static func aggregationReporter(enabled: Bool) -> (@Sendable (AggregationProgress) -> Void)? {
        guard enabled, StandardOutput.error().isTerminal else { return nil }
        let line = ProgressBox()
        return { progress in
            let total = max(progress.end, 1) - 1
            let rate = progress.seconds > 0 ? Int(Double(progress.events) / progress.seconds) : 0
            line.update("aggregating: sequence \(progress.position - 1) of \(total), \(progress.events) events, \(rate) events/s")
        }
    }
}

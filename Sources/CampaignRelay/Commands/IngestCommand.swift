import ArgumentParser
import RelayCore
import RelayEventJSON
import RelayLog
import RelayServer

/// `campaign-relay ingest`: appends JSONL events durably to the log.
struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Append events from a JSONL file (or - for standard input) durably to the log.",
        discussion: """
            Every valid line is appended and fdatasync'ed before the summary reports it accepted. \
            Invalid lines are reported on standard error as "line N: reason" and not appended; the \
            others still are. Blank lines are skipped.

            Exit status: 0 when every line was accepted, 2 when some lines were rejected, 1 when the \
            log refused to store events (e.g. log full; the summary says where ingest stopped).
            """
    )

    @Argument(help: ArgumentHelp("JSONL file to ingest, or - for standard input.", valueName: "file"))
    var input: String = "-"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Read and commit the input in batches of about this many bytes (larger: faster; smaller: earlier acknowledgements).", valueName: "bytes"))
    var batchBytes: Int = 4 << 20

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Print a JSON line on standard output each time a batch is durable: {\"ack\":{\"lines\":[a,b],\"sequences\":[c,d]}} (lines a to b, stored as c to d). For producers that pipe events in and must know what is stored."
        ))
    var acks = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Accept only events of these integration keys (repeatable), as serve --integration-key does; lines with another key are refused. Default: any.",
            valueName: "key"))
    var integrationKey: [String] = []

    @OptionGroup var common: CommonOptions
    @OptionGroup var configFile: ConfigFileOption
    @OptionGroup var log: LogOptions

    func validate() throws {
        guard batchBytes >= 1024, batchBytes <= 256 << 20 else { throw ValidationError("--batch-bytes must be between 1024 and 268435456") }
    }

    func run() async throws {
        let logger = common.logger("campaign-relay.ingest")
        let source: ChunkedInput
        do {
            source = try await ChunkedInput.open(path: input, chunkBytes: batchBytes)
        } catch {
            throw RuntimeFailure("\(error)")
        }
        defer { source.close() }
        // A `serve` holding the data directory takes the events through its API instead.
        let wal: WriteAheadLog?
        let handoff: ServerHandoff?
        do {
            wal = try await WriteAheadLog.open(dataDirectory: common.dataDir, configuration: try await log.configuration(), logger: logger)
            handoff = nil
        } catch {
            guard let server = ServerHandoff.server(holding: common.dataDir, after: error) else { throw error }
            wal = nil
            handoff = ServerHandoff(record: server)
            logger.notice(
                "the log is held by a running server; handing the events to it", metadata: ["server": "\(server.url)", "pid": "\(server.pid)"])
        }
        // The one ingest path: the same appends and counters as serve's endpoints, and the same
        // key rule, applied where the lines are decoded.
        let tenants = try await configFile.tenants()
        let admission = EventAdmission(
            integrationKeys: Set(integrationKey), tenantKeys: Dictionary(uniqueKeysWithValues: tenants.map { ($0.name, Set($0.integrationKeys)) }))
        let ingestor = wal.map { EventIngestor(log: $0, metrics: RelayMetrics(version: RelayVersion.current)) }
        var summary = IngestSummary()
        var progress = ProgressLine(enabled: !common.json)
        var errors = StandardOutput.error()
        var output = StandardOutput.output()
        let started = SystemClock.monotonicNanoseconds()
        var inFlight: [Task<(EventLines.Decoded, ChunkedInput.Chunk), Never>] = []
        var failure: String?

        func store(_ decoded: EventLines.Decoded, _ chunk: ChunkedInput.Chunk) async {
            for rejection in decoded.rejections {
                summary.reject(rejection)
                if !common.json { errors.line(rejection.description) }
            }
            errors.flush()
            guard failure == nil, !decoded.events.isEmpty else { return }
            let chunkEnd = chunk.firstLine + chunk.lineCount - 1
            // A server takes one tenant's events per request, on that tenant's path: the chunk goes
            // in runs of one tenant, in the file's order.
            let runs = handoff == nil ? [(decoded.events, decoded.eventLines)] : Self.tenantRuns(decoded.events, lines: decoded.eventLines)
            for (index, run) in runs.enumerated() {
                let firstLine = index == 0 ? chunk.firstLine : run.1.first ?? chunk.firstLine
                let lastLine = index + 1 < runs.count ? (runs[index + 1].1.first ?? chunkEnd + 1) - 1 : chunkEnd
                guard await storeRun(run.0, lines: run.1, ackLines: firstLine...max(firstLine, lastLine), chunk: chunk) else { return }
            }
            summary.linesDone = chunkEnd
        }

        /// Stores one run of events (one tenant's, when a server takes them); false once it failed.
        func storeRun(_ run: [Event], lines runLines: [Int], ackLines: ClosedRange<Int>, chunk: ChunkedInput.Chunk) async -> Bool {
            var events = run
            var lines = runLines
            while !events.isEmpty {
                let range: Range<UInt64>
                if let ingestor {
                    do {
                        range = try await ingestor.append(events)
                    } catch {
                        failure = error.description
                        summary.stoppedAtLine = chunk.firstLine
                        return false
                    }
                } else if let handoff {
                    switch await handoff.send(events) {
                    case .stored(let stored):
                        range = stored
                    case .refused(let problems):
                        // The server's rules (e.g. --integration-key) refused some lines: report
                        // them, send the rest again.
                        let before = events.count
                        for problem in problems.sorted(by: { $0.index > $1.index }) where problem.index < events.count {
                            summary.reject(
                                EventLines.Rejection(line: lines[problem.index], error: EventInputError(field: problem.field, problem.message)))
                            if !common.json { errors.line("line \(lines[problem.index]): \(problem.message)") }
                            events.remove(at: problem.index)
                            lines.remove(at: problem.index)
                        }
                        errors.flush()
                        if events.count == before {
                            failure = "\(handoff.name) refused the batch without saying which lines"
                            return false
                        }
                        continue
                    case .failed(let message):
                        failure = message
                        summary.stoppedAtLine = chunk.firstLine
                        return false
                    }
                } else {
                    return false
                }
                summary.accept(range)
                if acks {
                    output.line(APIJSON.text(IngestAck(lines: ackLines, sequences: range)))
                    output.flush()
                }
                return true
            }
            return true
        }

        // Decode ahead on the other core while the previous chunk is compressed and synced.
        while failure == nil, let chunk = try await source.next() {
            let defaultTime = EventTime.now()
            inFlight.append(
                Task.detached { (EventLines.decode(chunk.bytes, firstLine: chunk.firstLine, defaultTime: defaultTime, admission: admission), chunk) })
            if inFlight.count >= 3 {
                let (decoded, done) = await inFlight.removeFirst().value
                await store(decoded, done)
                let elapsed = Double(SystemClock.monotonicNanoseconds() - started) / 1e9
                let bytesRead = await source.bytesRead
                progress.update(summary.progressText(elapsed: elapsed, bytesRead: bytesRead, totalBytes: source.totalBytes))
            }
        }
        for task in inFlight {
            let (decoded, done) = await task.value
            await store(decoded, done)
        }
        progress.finish()
        await wal?.close()
        await handoff?.shutdown()
        summary.seconds = Double(SystemClock.monotonicNanoseconds() - started) / 1e9
        if let failure {
            summary.error = failure
            if !common.json { errors.line("error: \(failure)") }
        }
        output.line(common.json ? summary.json : summary.text)
        output.flush()
        errors.flush()
        if failure != nil { throw ExitCode(1) }
        if summary.rejected > 0 { throw ExitCode(2) }
    }
}

extension IngestCommand {
    /// `events` (with their line numbers) cut into runs of one tenant each, in order.
    static func tenantRuns(_ events: [Event], lines: [Int]) -> [([Event], [Int])] {
        var runs: [([Event], [Int])] = []
        for (event, line) in zip(events, lines) {
            if let last = runs.indices.last, runs[last].0.last?.tenant == event.tenant {
                runs[last].0.append(event)
                runs[last].1.append(line)
            } else {
                runs.append(([event], [line]))
            }
        }
        return runs
    }
}

/// `ingest --acks`: `{"ack":{"lines":[a,b],"sequences":[c,d]}}`, lines a to b stored as sequences
/// c to d, printed once they are durable.
struct IngestAck: Encodable {
    var lines: ClosedRange<Int>
    var sequences: Range<UInt64>

    private enum CodingKeys: String, CodingKey { case ack }
    private enum AckKeys: String, CodingKey { case lines, sequences }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var ack = container.nestedContainer(keyedBy: AckKeys.self, forKey: .ack)
        try ack.encode([lines.lowerBound, lines.upperBound], forKey: .lines)
        try ack.encode([sequences.lowerBound, sequences.upperBound - 1], forKey: .sequences)
    }
}

import ArgumentParser
import RelayCore
import RelayForwarding
import RelayLog

/// `campaign-relay replay`: re-sends a range of the log, independent of the uploader's position.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Re-send a range of logged events to the Campaign hosts (e.g. after Campaign lost a day).",
        discussion: """
            --from and --to take a sequence number (--to inclusive) or an RFC 3339 time (events whose \
            own time is at or after --from and before --to). Replays do not move the uploader's \
            position, do not skip unchanged registrations, and may run while a server runs. Retries, \
            Retry-After and dead letters work as in `upload`.
            """
    )

    @Option(name: .long, help: ArgumentHelp("First sequence number, or RFC 3339 time.", valueName: "seq|time"))
    var from: String

    @Option(name: .long, help: ArgumentHelp("Last sequence number (inclusive), or RFC 3339 time (exclusive).", valueName: "seq|time"))
    var to: String?

    @Option(name: .long, help: ArgumentHelp("Send at most this many events per second.", valueName: "n"))
    var maxRate: Double?

    @OptionGroup var upstream: UpstreamOptions
    @OptionGroup var common: CommonOptions

    enum Bound {
        case sequence(UInt64)
        case time(Int64)

        init(_ text: String, option: String) throws {
            if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let sequence = UInt64(text) {
                self = .sequence(sequence)
                return
            }
            do {
                self = .time(try EventTime(rfc3339: text, field: option).nanosecondsSinceEpoch)
            } catch {
                throw ValidationError("\(option) must be a sequence number or an RFC 3339 time: \(error.message)")
            }
        }
    }

    func validate() throws {
        if let maxRate, maxRate <= 0 { throw ValidationError("--max-rate must be positive") }
        _ = try Bound(from, option: "--from")
        if let to { _ = try Bound(to, option: "--to") }
    }

    func run() async throws {
        let (tracking, marketing) = try upstream.hosts()
        let logger = common.logger("campaign-relay.replay")
        var sequences: Range<UInt64> = 1..<UInt64.max
        var times: Range<Int64>?
        switch try Bound(from, option: "--from") {
        case .sequence(let first): sequences = max(first, 1)..<UInt64.max
        case .time(let first): times = first..<Int64.max
        }
        if let to {
            switch try Bound(to, option: "--to") {
            case .sequence(let last): sequences = sequences.lowerBound..<max(sequences.lowerBound, last &+ 1)
            case .time(let end): times = (times?.lowerBound ?? Int64.min)..<max(times?.lowerBound ?? Int64.min, end)
            }
        }
        try common.requireDataDirectory()
        let walDirectory = LogLayout(dataDirectory: common.dataDir).walDirectory
        let store = try await ForwardingStore(dataDirectory: common.dataDir)
        let configuration = try upstream.configuration(maximumRate: maxRate)
        // The same lanes as `upload`, tracking hits through the pipeline included; a replay keeps
        // no cursor and resends registrations even when unchanged.
        let uploader = try Uploader(
            source: .range(walDirectory: walDirectory, sequences: sequences, times: times), trackingHost: tracking, marketingHost: marketing,
            store: store, configuration: configuration, deduplicates: false, logger: logger
        )
        let allLanes = await uploader.lanes
        let started = SystemClock.monotonicNanoseconds()
        let box = ProgressBox()
        let showProgress = !common.json
        let reporter = Task {
            while !Task.isCancelled {
                var parts: [String] = []
                for lane in allLanes {
                    let stats = await lane.stats
                    parts.append("\(lane.kind.rawValue): \(stats.delivered) re-sent, at sequence \(stats.position)")
                }
                if showProgress { box.update("replaying: " + parts.joined(separator: " | ")) }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        let (_, interrupted) = try await runCancellingOnSignals {
            try await uploader.run(until: nil)
        }
        reporter.cancel()
        box.finish()
        var statistics = await uploader.statistics()
        // A replay has no backlog once it ends: its end is where it stopped.
        statistics = statistics.mapValues { stats in
            var finished = stats
            finished.end = stats.position
            return finished
        }
        let summary = UploadSummary(
            lanes: statistics, seconds: Double(SystemClock.monotonicNanoseconds() - started) / 1e9,
            pendingDeadLetters: (try? await store.pendingDeadLetterCount()) ?? 0)
        var output = StandardOutput.output()
        output.line(common.json ? summary.json : "replayed: " + summary.text)
        output.flush()
        if interrupted { throw ExitCode(1) }
    }
}

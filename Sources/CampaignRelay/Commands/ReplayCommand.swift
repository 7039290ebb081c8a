import ArgumentParser
import RelayAggregator
import RelayCore
import RelayEventJSON
import RelayForwarding
import RelayIO
import RelayLog
import RelayServer

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

            The range is checked against what the log still keeps (segments every consumer has \
            passed are kept for --retain within --retain-bytes, then deleted or archived): a \
            range wholly outside it is an error naming the range kept \
            (exit 1, nothing sent); a range partly outside it is replayed for the part kept and \
            reported as missing the rest (exit 2); a range in which no event is found is an error \
            (exit 1). --dry-run counts what would be sent (per host, per delivery, per app) and \
            sends nothing. --to-aggregates counts the range into a new aggregates database (the \
            schema of aggregates.sqlite) instead of sending it, for comparison.

            --log-postgres-url URL reads the log a relay kept in PostgreSQL (serve --log-postgres-url): \
            the stream of --relay-name (default: the relay id of --data-dir), byte for byte as from \
            its files; --data-dir then only keeps the replay's dead letters.

            --from-archive DIR reads the segments of an archive (--archive-dir, `wal archive`) \
            where the log no longer has them; segment files copied from another relay are read \
            the same way (give a --data-dir of their own, so this relay's log is not mixed in; \
            it is created if missing, for the replay's dead letters). \
            Every frame is verified as it is read.

            Tenants: with --config, each [tenant.NAME] table's events go to that tenant's own \
            hosts, as `serve` sends them; the dry run and the summary count per tenant. The \
            events of a tenant the file does not declare (or of a kind it names no host for) are \
            not sent, and said so (exit 2).

            Exit status: 0 all of the range replayed, 1 nothing replayed (or an error), 2 part \
            of the range missing or not sent (the rest replayed); suits a scheduler (see \
            docs/nightly-replay.md).
            """
    )

    @Option(name: .long, help: ArgumentHelp("First sequence number, or RFC 3339 time.", valueName: "seq|time"))
    var from: String

    @Option(name: .long, help: ArgumentHelp("Last sequence number (inclusive), or RFC 3339 time (exclusive).", valueName: "seq|time"))
    var to: String?

    @Flag(name: .long, help: "Send nothing: print what would be sent, per host, per delivery and per app.")
    var dryRun = false

    @Option(
        name: .long,
        help: ArgumentHelp("Read segments the log no longer has from this archive (--archive-dir, `wal archive`).", valueName: "dir"))
    var fromArchive: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Send nothing: count the range into this new SQLite file (aggregates' schema) and print the counts.", valueName: "file"))
    var toAggregates: String?

    @OptionGroup var storedLog: StoredLogOptions
    @OptionGroup var upstream: UpstreamOptions
    @OptionGroup var encryption: EncryptionOptions
    @OptionGroup var common: CommonOptions
    @OptionGroup var configFile: ConfigFileOption

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
        _ = try Bound(from, option: "--from")
        if let to { _ = try Bound(to, option: "--to") }
        if dryRun, toAggregates != nil { throw ValidationError("--dry-run and --to-aggregates are two ways of not sending: give one") }
        if let fromArchive, fromArchive.isEmpty { throw ValidationError("--from-archive must not be empty") }
        if fromArchive != nil, storedLog.url != nil {
            throw ValidationError("--from-archive reads segment files; a log in PostgreSQL (--log-postgres-url) keeps no archive: give one of them")
        }
    }

    func run() async throws {
        let tenants = try await configFile.tenants()
        let destinations = tenants.map(\.configuration.destinations)
        let tenantsHaveHosts = destinations.contains { $0.trackingHost != nil || $0.marketingHost != nil }
        let (tracking, marketing) = try upstream.hosts(requireOne: !dryRun && toAggregates == nil && !tenantsHaveHosts)
        try configFile.checkForwarding(tenants, tracking: tracking != nil, marketing: marketing != nil)
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
        let walDirectory = LogLayout(dataDirectory: common.dataDir).walDirectory
        let keys = try await encryption.keyRing()
        let reads = BlockingExecutor(name: "replay-range")
        let stream = try await storedLog.stream(dataDirectory: common.dataDir, keys: keys)
        if fromArchive == nil, stream == nil {
            try common.requireDataDirectory()
        } else {
            // Segment files from another relay, or a stream in PostgreSQL, need no log here: only
            // a place for the replay's dead letters.
            let dataDirectory = common.dataDir
            do {
                try await reads.run { () throws(FileSystemError) in try PosixFileSystem().createDirectory(dataDirectory) }
            } catch {
                throw RuntimeFailure("cannot create the data directory for the replay's dead letters: \(error)")
            }
        }
        let archiveDirectory = fromArchive
        if let archiveDirectory { try await ArchiveDirectoryCheck.requireExisting(archiveDirectory) }
        let stored = stream ?? .files(walDirectory: walDirectory, archiveDirectory: archiveDirectory, keys: keys)
        let range = ReplayRange(sequences: sequences, times: times, in: stored)
        let extent = try await reads.run { () throws(LogError) in try stored.extent() }
        let missing: [String]
        do {
            missing = try range.missing(in: extent)
        } catch {
            throw RuntimeFailure("nothing replayed: \(error.description)")
        }
        for gap in missing { logger.warning("part of the range is not replayed", metadata: ["missing": "\(gap)"]) }
        let (trackingURL, marketingURL) = (tracking?.description, marketing?.description)
        let counting = { @Sendable () async throws -> ReplayDryRun in
            try await reads.run { () throws(LogError) in
                try ReplayDryRun.count(
                    stored, range: range, trackingURL: trackingURL, marketingURL: marketingURL, tenants: destinations, missing: missing)
            }
        }
        if dryRun {
            let counts = try await counting()
            var output = StandardOutput.output()
            output.line(common.json ? APIJSON.text(counts) : counts.text)
            output.flush()
            guard counts.events > 0 else {
                throw RuntimeFailure("nothing to replay: no event of the range was found; \(range.keeps(extent))")
            }
            if !missing.isEmpty || counts.unsent > 0 { throw ExitCode(2) }
            return
        }
        if let toAggregates {
            return try await recount(into: toAggregates, range: range, stored: stored, missing: missing)
        }
        // Read first, so the summary can say which tenants' events had no host to go to.
        let counts = try await counting()
        let store = try await ForwardingStore(dataDirectory: common.dataDir, keys: keys)
        let configuration = try upstream.configuration()
        // The same lanes as `upload`, tracking hits through the pipeline included; a replay keeps
        // no cursor and resends registrations even when unchanged.
        let uploader = try Uploader(
            source: .range(stored, sequences: sequences, times: times),
            sinks: UpstreamOptions.sinkLists(tracking: tracking, marketing: marketing, spares: try upstream.spareHosts(), tenants: destinations),
            store: store, configuration: configuration, deduplicates: false, logger: logger
        )
        let allLanes = uploader.lanes
        let started = SystemClock.monotonicNanoseconds()
        let box = ProgressBox()
        let showProgress = !common.json
        let reporter = Task {
            while !Task.isCancelled {
                var parts: [String] = []
                for lane in allLanes {
                    let stats = await lane.stats
                    parts.append("\(lane.name): \(stats.delivered) re-sent, at sequence \(stats.position)")
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
        var statistics = await uploader.statisticsByLane()
        // A replay has no backlog once it ends: its end is where it stopped.
        statistics = statistics.mapValues { stats in
            var finished = stats
            finished.end = stats.position
            return finished
        }
        let summary = UploadSummary(
            lanes: statistics, sinks: allLanes.map(UploadSummary.Lane.init), seconds: Double(SystemClock.monotonicNanoseconds() - started) / 1e9,
            pendingDeadLetters: (try? await store.pendingDeadLetterCount()) ?? 0, missing: missing)
        var output = StandardOutput.output()
        output.line(common.json ? summary.json : "replayed: " + summary.text)
        for gap in missing where !common.json { output.line("missing: " + gap) }
        output.flush()
        if let unsent = counts.unsentText {
            var errors = StandardOutput.error()
            errors.line(unsent)
            errors.flush()
        }
        if interrupted { throw ExitCode(1) }
        let found = statistics.values.reduce(0) { $0 + $1.delivered + $1.deadLettered + $1.rejected + $1.skippedDuplicates }
        guard found > 0 else {
            throw RuntimeFailure(
                "nothing replayed: no event of the range for \(statistics.keys.sorted().joined(separator: " and ")) was found; \(range.keeps(extent))"
            )
        }
        if !missing.isEmpty || counts.unsent > 0 { throw ExitCode(2) }
    }

    /// `--to-aggregates`: counts the range into a new database and prints its counts as `stats`
    /// does (`--json`: the same object as `stats --json`).
    private func recount(into path: String, range: ReplayRange, stored: StoredLog, missing: [String]) async throws {
        let progress = ProgressLine.aggregationReporter(enabled: !common.json)
        let summary = try await RangeRecount.count(stored, sequences: range.sequences, times: range.times, into: path, progress: progress)
        let queries = try await AggregateQueries(path: path)
        let snapshot = try await queries.report(deliveryId: nil, limit: nil, everything: true)
        await queries.close()
        var output = StandardOutput.output()
        if common.json {
            output.line(APIJSON.text(StatsOutput(report: snapshot, server: nil)))
        } else {
            output.line(
                "counted \(counted(summary.events, "event")) of sequences \(summary.startPosition) to \(summary.endPosition - 1) into \(path):")
            output.write(
                StatsCommand.table(
                    covered: snapshot.sequences, deliveries: snapshot.deliveries, registrations: snapshot.registrations, origins: snapshot.origins))
            for gap in missing { output.line("missing: " + gap) }
        }
        output.flush()
        guard summary.events > 0 else {
            throw RuntimeFailure("nothing counted: no event of the range was found; \(path) holds no counts")
        }
        if !missing.isEmpty { throw ExitCode(2) }
    }
}

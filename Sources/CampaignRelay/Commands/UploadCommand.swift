import ArgumentParser
import CampaignProtocol
import RelayCore
import RelayForwarding
import RelayLog

/// `campaign-relay upload`: forwards the log to the Campaign hosts.
struct UploadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Forward logged events to the Campaign tracking and marketing hosts.",
        discussion: """
            Tracking hits go to the tracking host (GET /r/?id=h…), registrations to the marketing host \
            (registerIOS.jssp / registerAndroid.jssp). Each host has its own saved position, so a \
            missing or failing host never holds the other back.

            Transport errors, timeouts and 408/425/429/500/502/503/504 are retried with full-jitter \
            exponential backoff, honouring Retry-After; after --breaker-threshold failures in a row \
            the host is only probed until it answers. Any other answer than 200 is permanent: the \
            event goes to the dead-letter store (`campaign-relay deadletter list`). A registration \
            equal to the last one delivered for its token is skipped, as the SDKs do. After a crash, \
            at most --max-unsynced events per host are sent a second time.

            With --upstream-relay URL, every event (hits and registrations alike) goes instead to a \
            central relay started with `serve --relay-token`, in compressed batches it appends \
            exactly once (docs/relay-protocol.md); the position moves only on its durable answer.

            With --config, each [tenant.NAME] table's events go to that tenant's own hosts, from
            the positions serve keeps for it.

            Without --until-drained it follows the log until SIGINT/SIGTERM.
            """
    )

    @OptionGroup var upstreamRelay: UpstreamRelayOptions

    @Flag(name: .long, help: "Exit 0 once every event in the log was delivered, skipped or dead-lettered.")
    var untilDrained = false

    @OptionGroup var upstream: UpstreamOptions
    @OptionGroup var retention: RetentionOptions
    @OptionGroup var common: CommonOptions
    @OptionGroup var configFile: ConfigFileOption

    func run() async throws {
        if let central = try upstreamRelay.central(campaignHosts: try upstream.hosts(requireOne: false)) {
            return try await handOn(to: central)
        }
        let tenants = try await configFile.tenants()
        let destinations = tenants.map(\.configuration.destinations)
        let (tracking, marketing) = try upstream.hosts(requireOne: !destinations.contains { $0.trackingHost != nil || $0.marketingHost != nil })
        try configFile.checkForwarding(tenants, tracking: tracking != nil, marketing: marketing != nil)
        let logger = common.logger("campaign-relay.upload")
        let sinkLists = UpstreamOptions.sinkLists(tracking: tracking, marketing: marketing, spares: try upstream.spareHosts(), tenants: destinations)
        let log: WriteAheadLog
        do {
            // Each tenant's lanes keep cursors of their own, the ones serve keeps for them.
            log = try await WriteAheadLog.open(
                dataDirectory: common.dataDir, configuration: try await retention.applied(),
                consumers: sinkLists.consumers, logger: logger)
        } catch {
            guard let server = ServerHandoff.server(holding: common.dataDir, after: error) else { throw error }
            let forwards = [server.forwardsTracking ? "tracking hits" : nil, server.forwardsRegistrations ? "registrations" : nil].compactMap { $0 }
            if forwards.isEmpty {
                throw RuntimeFailure(
                    "the server (pid \(server.pid)) at \(server.url) holds the log and forwards nothing: it forwards when it has hosts; restart it with --tracking-host/--marketing-host (or stop it and run upload)"
                )
            }
            var output = StandardOutput.output()
            output.line(
                "the server (pid \(server.pid)) at \(server.url) holds the log and forwards its \(forwards.joined(separator: " and ")) itself; nothing to do"
            )
            output.flush()
            return
        }
        let store: ForwardingStore
        do {
            store = try await ForwardingStore(dataDirectory: common.dataDir, keys: try await retention.encryption.keyRing())
        } catch {
            await log.close()
            throw error
        }
        let uploader: Uploader
        do {
            uploader = try Uploader(log: log, sinks: sinkLists, store: store, configuration: try upstream.configuration(), logger: logger)
        } catch {
            await log.close()
            throw error
        }
        try await runReporting(
            log: log, uploader: uploader, pendingDeadLetters: { (try? await store.pendingDeadLetterCount()) ?? 0 })
    }

    /// Runs `run` until the log's end (`--until-drained`) or a signal, with progress, then prints
    /// the summary and exits 1 when the log was not drained.
    private func runReporting(log: WriteAheadLog, uploader: Uploader, pendingDeadLetters: () async -> Int) async throws {
        let statistics = { @Sendable in await uploader.statisticsByLane() }
        let run = { @Sendable (target: UInt64?) async throws in try await uploader.run(until: target) }
        let target = untilDrained ? await log.durableSequence : nil
        let started = SystemClock.monotonicNanoseconds()
        let progress = UploadProgress(enabled: !common.json, statistics: statistics)
        let reporter = Task { await progress.report() }
        let result: Result<((), interrupted: Bool), any Error>
        do {
            result = .success(try await runCancellingOnSignals { try await run(target) })
        } catch {
            result = .failure(error)
        }
        reporter.cancel()
        await progress.finish()
        let lanes = await statistics()
        await log.close()
        let seconds = Double(SystemClock.monotonicNanoseconds() - started) / 1e9
        let summary = UploadSummary(
            lanes: lanes, sinks: uploader.lanes.map(UploadSummary.Lane.init), seconds: seconds, pendingDeadLetters: await pendingDeadLetters())
        var output = StandardOutput.output()
        output.line(common.json ? summary.json : summary.text)
        output.flush()
        let interrupted = try result.get().interrupted
        if untilDrained, interrupted || summary.backlog > 0 {
            var errors = StandardOutput.error()
            errors.line("stopped before the log was drained (backlog \(summary.backlog))")
            errors.flush()
            throw ExitCode(1)
        }
    }

    /// `--upstream-relay`: the log, batch by batch, to a central relay.
    private func handOn(to central: UpstreamRelayOptions.Central) async throws {
        let logger = common.logger("campaign-relay.upload")
        var configuration = try upstream.configuration()
        configuration.clientCertificate = central.clientCertificate
        let log: WriteAheadLog
        do {
            log = try await WriteAheadLog.open(
                dataDirectory: common.dataDir, configuration: try await retention.applied(), consumers: central.sinkLists.consumers, logger: logger)
        } catch {
            guard let server = ServerHandoff.server(holding: common.dataDir, after: error) else { throw error }
            throw RuntimeFailure(
                "the server (pid \(server.pid)) at \(server.url) holds the log; stop it to hand its events on with upload --upstream-relay")
        }
        let uploader: Uploader
        do {
            // The store of the Campaign lanes' dead letters: a central relay's refusals wait in the log instead.
            let store = try await ForwardingStore(dataDirectory: common.dataDir, keys: try await retention.encryption.keyRing())
            uploader = try Uploader(log: log, sinks: central.sinkLists, store: store, configuration: configuration, logger: logger)
        } catch {
            await log.close()
            throw error
        }
        try await runReporting(log: log, uploader: uploader, pendingDeadLetters: { 0 })
    }
}

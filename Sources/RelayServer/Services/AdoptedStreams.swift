import Logging
import NIOConcurrencyHelpers
import RelayAggregator
import RelayCore
import RelayForwarding
import RelayIO
import RelayLog
import RelayPostgres
import RelayPrivacy

/// The streams this relay forwards for relays that stopped (``RelayPostgres/StreamLeases``):
/// each has its log (read only), an uploader with the same sinks and breaker as this relay's own,
/// its dead letters (kept under the adopted stream), its erasures (``PersonalDataErasure`` over
/// the stream: the plans its relay did not finish are masked from the first read and finished
/// here, and an erasure sent to this relay erases the stream too), and its counting into the
/// fleet's tables.
///
/// Relays sharing a log database are expected to share their forwarding configuration (hosts,
/// tenants): an adopted stream is forwarded as this relay forwards its own.
actor AdoptedStreams {
    private struct Running {
        var log: WriteAheadLog
        var erasure: PersonalDataErasure
        var letters: PostgresDeadLetters
        var task: Task<Void, Never>
    }

    private let configuration: RelayServerConfiguration
    private let settings: PostgresLogSettings
    private let metrics: RelayMetrics
    private let fence: StreamLeaseFence
    private let logger: Logger
    private var running: [String: Running] = [:]

    init(
        configuration: RelayServerConfiguration, settings: PostgresLogSettings, metrics: RelayMetrics, fence: StreamLeaseFence, logger: Logger
    ) {
        self.configuration = configuration
        self.settings = settings
        self.metrics = metrics
        self.fence = fence
        self.logger = logger
    }

    /// The streams forwarded here now.
    var streams: [String] { running.keys.sorted() }

    /// The erasures of the streams forwarded here now, by stream name.
    var erasures: [(stream: String, erasure: PersonalDataErasure)] {
        running.keys.sorted().compactMap { name in running[name].map { (name, $0.erasure) } }
    }

    /// Where an adopted stream's local files go (caches, and its erasures' audit log): nothing
    /// there is needed to forward it.
    private func directory(of stream: String) -> String { "\(configuration.dataDirectory)/adopted/\(stream)" }

    /// Starts forwarding and counting `stream` (its lease is this relay's); `false` when it could
    /// not be opened (the next lease round tries again).
    func adopt(_ stream: String) async -> Bool {
        guard running[stream] == nil else { return true }
        var streamLogger = self.logger
        streamLogger[metadataKey: "adopted-stream"] = "\(stream)"
        let logger = streamLogger
        let sinks = configuration.sinkLists
        var consumers = sinks.consumers
        if configuration.postgres != nil { consumers.append(FleetAggregator.consumer) }
        let opened: PostgresLog.Opened
        do {
            opened = try await PostgresLog.open(
                location: settings.location, stream: stream, newRelayID: stream, configuration: configuration.log, consumers: consumers,
                fenced: Set(sinks.consumers.map(\.name)), fence: fence, readOnly: true, walDirectory: directory(of: stream), logger: logger)
        } catch {
            logger.error("could not open an adopted stream; the next lease round tries again", metadata: ["error": "\(error)"])
            return false
        }
        // The stream's dead letters stay under its name, and what its lanes delivered is
        // remembered apart from this relay's own.
        let store: ForwardingStore
        let letters = PostgresDeadLetters(location: settings.location, stream: stream, fence: fence)
        do {
            let local = directory(of: stream)
            try await BlockingExecutor(name: "adopted-directory").run { () throws(FileSystemError) in try PosixFileSystem().createDirectory(local) }
            store = try await ForwardingStore(
                dataDirectory: local, keys: configuration.log.encryption, table: letters, pseudonymDirectory: configuration.dataDirectory)
        } catch {
            logger.error("could not open an adopted stream's forwarding store; the next lease round tries again", metadata: ["error": "\(error)"])
            await opened.log.close()
            return false
        }
        var upload = configuration.upload
        upload.threadPriority = .background
        upload.forwardingPermit = ForwardingPermitReference(fence.permit(for: stream))
        upload.adoptedStream = stream
        let uploader: Uploader
        do {
            uploader = try Uploader(
                log: opened.log, sinks: sinks, store: store, configuration: upload, logger: logger,
                metrics: { [metrics] in metrics.laneMetrics(for: $0, adoptedStream: stream) })
        } catch {
            logger.error("could not forward an adopted stream", metadata: ["error": "\(error)"])
            await opened.log.close()
            return false
        }
        let fleet = configuration.postgres.map {
            FleetAggregationService(
                location: $0, log: opened.log, status: FleetStatus(), metrics: metrics, logger: logger,
                aggregateMetrics: configuration.aggregateMetrics)
        }
        let erasure = PersonalDataErasure(
            log: opened.log, dataDirectory: directory(of: stream), archiveDirectories: [],
            stream: PostgresLogErasure(stream: stream, location: settings.location, fence: fence), store: store, aggregator: nil,
            fleet: configuration.postgres.map {
                PersonalDataErasure.directFleetStep(
                    location: $0, relayID: opened.log.identity.relayID, table: configuration.aggregateMetrics, logger: logger)
            },
            sinkKinds: configuration.sinkKinds, metrics: configuration.aggregateMetrics, logger: logger)
        logger.notice("forwarding an adopted stream", metadata: ["events-stored": "\(opened.storedEvents)"])
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                // The erasures its relay did not finish (masked since the open) are finished here.
                group.addTask {
                    do {
                        let finished = try await erasure.finishPending()
                        if !finished.isEmpty {
                            logger.notice("finished the erasures the adopted stream's relay left", metadata: ["erasures": "\(finished.count)"])
                        }
                    } catch {
                        logger.error(
                            "an adopted stream's unfinished erasure cannot be finished now; its registrations stay masked, and the next erasure finishes it",
                            metadata: ["error": "\(error)"])
                    }
                }
                group.addTask {
                    do {
                        try await uploader.run(until: nil)
                    } catch {
                        logger.error("forwarding an adopted stream stopped", metadata: ["error": "\(error)"])
                    }
                }
                if let fleet { group.addTask { try? await fleet.run() } }
            }
        }
        running[stream] = Running(log: opened.log, erasure: erasure, letters: letters, task: task)
        return true
    }

    /// How long a handback waits for the stream's lanes and counting to stop before it goes on
    /// without them (they are cancelled; a relay stopping must not hang on them).
    static let handBackWait: Duration = .seconds(10)

    /// Stops forwarding `stream` and returns once its lanes have no request in flight, or after
    /// ``handBackWait`` (logged) if they do not stop.
    func handBack(_ stream: String) async {
        guard let adopted = running.removeValue(forKey: stream) else { return }
        adopted.task.cancel()
        // Awaiting a task's value does not end when the awaiting task is cancelled: the wait and
        // the deadline race in tasks of their own, and the first answer wins.
        let answered = NIOLockedValueBox(false)
        let stopped = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            @Sendable func answer(_ value: Bool) {
                let first = answered.withLockedValue { done in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume(returning: value) }
            }
            Task {
                await adopted.task.value
                answer(true)
            }
            Task {
                try? await Task.sleep(for: Self.handBackWait)
                answer(false)
            }
        }
        if !stopped {
            logger.error(
                "an adopted stream's lanes did not stop within \(Self.handBackWait); going on without them",
                metadata: ["adopted-stream": "\(stream)"])
        }
        // An erasure of the stream under way ends (its rewrite is under the lease, which is still
        // this relay's); none starts after. A plan left unfinished is masked by whoever takes the
        // stream next, from its first read.
        await adopted.erasure.close()
        await adopted.letters.close()
        await adopted.log.close()
        logger.notice("stopped forwarding an adopted stream", metadata: ["adopted-stream": "\(stream)"])
    }
}

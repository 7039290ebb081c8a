import Logging
import NIOConcurrencyHelpers
import RelayAggregates
import RelayCore
import RelayLog
import RelayPostgres
import ServiceLifecycle

/// What `/readyz` and `/metrics` say of the fleet aggregator: how far PostgreSQL has counted, and
/// the last failure while it cannot.
final class FleetStatus: Sendable {
    struct State: Sendable {
        /// Every event below it is counted in PostgreSQL; `nil` until the aggregator has started.
        var nextSequence: UInt64?
        var lastError: String?
        var failingSince: EventTime?
    }

    private let state = NIOLockedValueBox(State())
    /// The aggregator of the session open now: an erasure changes the fleet's counts through it.
    private let session = NIOLockedValueBox<FleetAggregator?>(nil)

    /// The aggregator counting now; `nil` while PostgreSQL does not answer.
    var aggregator: FleetAggregator? { session.withLockedValue { $0 } }

    func attach(_ aggregator: FleetAggregator?) { session.withLockedValue { $0 = aggregator } }

    var current: State { state.withLockedValue { $0 } }

    func counted(through next: UInt64) {
        state.withLockedValue {
            $0.nextSequence = next
            $0.failingSince = nil
        }
    }

    func failed(_ error: FleetError) {
        state.withLockedValue {
            $0.lastError = error.description
            if $0.failingSince == nil { $0.failingSince = EventTime.now() }
        }
    }
}

/// `serve --postgres-url`: counts this relay's log into the fleet's PostgreSQL as events arrive.
/// PostgreSQL down or restarting stops nothing else: the aggregator retries with backoff (0.5 s
/// doubling to 5 s: an attempt on a server that is down costs a refused connection), each time in a new session (a new connection) that re-reads its
/// position from the database (a commit whose answer was lost is then known), and catches up.
struct FleetAggregationService: Service {
    let location: PostgresLocation
    let log: WriteAheadLog
    let status: FleetStatus
    let metrics: RelayMetrics
    let logger: Logger
    /// The metrics it counts (``RelayServerConfiguration/aggregateMetrics``).
    var aggregateMetrics: MetricTable = .standard

    func run() async throws {
        await cancelWhenGracefulShutdown { await aggregateWithRetries() }
        logger.notice("PostgreSQL aggregator stopped", metadata: ["next-sequence": "\(status.current.nextSequence ?? 0)"])
    }

    private func aggregateWithRetries() async {
        var failures = 0
        while !Task.isCancelled {
            let recovering = failures > 0
            do {
                try await location.connectedSession(timeout: FleetAggregator.operationTimeout(batchSize: 20_000), logger: logger) {
                    [log, status, logger, aggregateMetrics] connection, watch in
                    let aggregator = try await FleetAggregator(
                        connection: connection, watch: watch, log: log, priority: .background, metrics: aggregateMetrics, logger: logger)
                    let next = await aggregator.nextSequence
                    status.counted(through: next)
                    status.attach(aggregator)
                    defer { status.attach(nil) }
                    logger.notice(
                        recovering ? "PostgreSQL answers again; counting goes on" : "counting into PostgreSQL", metadata: ["next-sequence": "\(next)"]
                    )
                    do {
                        try await aggregator.run { summary in status.counted(through: summary.endPosition) }
                    } catch {
                        await aggregator.close()
                        throw error
                    }
                    await aggregator.close()
                }
                return
            } catch {
                if Task.isCancelled { return }
                failures += 1
                let failure = FleetError.describe(error)
                status.failed(failure)
                metrics.postgresErrors.increment()
                if failures == 1 || failures % 20 == 0 {
                    logger.warning(
                        "counting into PostgreSQL failed; events are still stored and forwarded, counting resumes when it answers",
                        metadata: ["error": "\(failure)", "failures": "\(failures)"])
                }
                let seconds = min(5, 0.5 * Double(1 << min(failures - 1, 4)))
                try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            }
        }
    }
}

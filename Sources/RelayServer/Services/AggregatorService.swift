import Logging
import RelayAggregator
import RelayCore
import ServiceLifecycle

/// Runs the aggregator continuously; on shutdown it finishes its transaction and saves its cursor.
///
/// A failure to count (SQLite on a full disk, an I/O error) is logged and tried again after a
/// pause that doubles up to ``maximumRetryDelay``, from the last event counted: counting resumes
/// by itself once the disk recovers. The service must not return before shutdown, because a
/// service that returns stops the whole server, and with it the intake.
struct AggregatorService: Service {
    let aggregator: Aggregator
    let logger: Logger
    /// The pause after a first failure.
    var retryDelay: Duration = .seconds(1)
    /// The longest pause between attempts.
    var maximumRetryDelay: Duration = .seconds(10)

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var delay = retryDelay
            while !Task.isCancelled {
                let started = ContinuousClock.now
                do {
                    try await aggregator.run()
                    return
                } catch {
                    // A run that went well for a while before it failed starts the pauses afresh.
                    if ContinuousClock.now - started > maximumRetryDelay { delay = retryDelay }
                    logger.error(
                        "the aggregator failed; it tries again from the last counted event",
                        metadata: ["error": "\(error)", "retry-in": "\(delay.humanText)"])
                    try await Task.sleep(for: delay)
                    delay = min(delay * 2, maximumRetryDelay)
                }
            }
        }
        await aggregator.close()
        let next = await aggregator.nextSequence
        logger.notice("aggregator stopped; counts saved", metadata: ["next-sequence": "\(next)"])
    }
}

import RelayLog
import ServiceLifecycle

/// Applies the log's retention now and then, so that an idle log (no cursor moving) still lets
/// its old segments go, and closes the log once everything that writes or reads it has stopped
/// (it is shut down last).
struct LogService: Service {
    let log: WriteAheadLog

    /// How often the retention is applied: a tenth of the retention age, within 1 s to 1 min.
    static func retentionInterval(for retention: LogRetention) -> Duration {
        min(.seconds(60), max(.seconds(1), retention.age / 10))
    }

    func run() async throws {
        let interval = Self.retentionInterval(for: log.configuration.retention)
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                // A failure is logged by the log itself and tried again next time.
                try? await log.applyRetention()
            }
        }
        await log.close()
    }
}

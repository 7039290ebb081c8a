public import RelayCore
public import RelayLog
import Synchronization

/// Appends validated events durably and says what to answer: the one ingest path, shared by every
/// endpoint of `serve` and by `campaign-relay ingest`, so the metrics count files too. (The
/// integration-key rule is applied where events are decoded: ``EventAdmission``.)
public final class EventIngestor: Sendable {
    let log: WriteAheadLog
    let metrics: RelayMetrics
    private let shuttingDown = Atomic<Bool>(false)

    /// An ingestor appending to `log`, counting in `metrics`.
    public init(log: WriteAheadLog, metrics: RelayMetrics) {
        self.log = log
        self.metrics = metrics
    }

    /// Refuses new events from now on (graceful shutdown).
    func beginShutdown() { shuttingDown.store(true, ordering: .relaxed) }

    /// Whether the server is shutting down.
    var isShuttingDown: Bool { shuttingDown.load(ordering: .relaxed) }

    /// Why events were not stored.
    public enum Refusal: Error, CustomStringConvertible {
        /// The relay cannot store now (log full, disk error, shutting down): retry later.
        case unavailable(String, retryAfterSeconds: Int)

        public var description: String {
            switch self {
            case .unavailable(let message, _): message
            }
        }
    }

    /// Appends `events` durably; returns their sequence numbers once fdatasync'ed.
    public func append(_ events: [Event]) async throws(Refusal) -> Range<UInt64> {
        guard !isShuttingDown else {
            throw .unavailable("the relay is shutting down; retry shortly (on another instance)", retryAfterSeconds: 1)
        }
        do {
            let range = try await log.append(events)
            metrics.requestsAcknowledged.increment()
            var registrations = 0
            for event in events { if case .registration = event { registrations += 1 } }
            if registrations > 0 { metrics.registrationsIngested.increment(by: Int64(registrations)) }
            if events.count > registrations { metrics.eventsIngested.increment(by: Int64(events.count - registrations)) }
            return range
        } catch {
            switch error {
            case .logFull: throw .unavailable("\(error)", retryAfterSeconds: 30)
            case .overloaded: throw .unavailable("\(error)", retryAfterSeconds: 1)
            case .closed: throw .unavailable("the relay is shutting down; retry shortly", retryAfterSeconds: 1)
            default: throw .unavailable("could not store the events durably: \(error)", retryAfterSeconds: 5)
            }
        }
    }
}

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
        guard !isShuttingDown else { throw Self.shuttingDownRefusal }
        do {
            let range = try await log.append(events)
            count(events)
            return range
        } catch {
            throw Self.refusal(error)
        }
    }

    /// Appends `events` durably, as ``append(_:)`` does, and calls `completion` with their
    /// sequence numbers once they are fdatasync'ed, or with the refusal: for an event loop that
    /// answers a request where it read it (``TrackingHitHandler``). `completion` runs on the log's
    /// executor, or at once on the caller's thread when the events are refused before queueing;
    /// it must not block.
    func append(_ events: [Event], completion: @escaping @Sendable (Result<Range<UInt64>, Refusal>) -> Void) {
        guard !isShuttingDown else { return completion(.failure(Self.shuttingDownRefusal)) }
        log.append(events) { result in
            switch result {
            case .success(let range):
                self.count(events)
                completion(.success(range))
            case .failure(let error):
                completion(.failure(Self.refusal(error)))
            }
        }
    }

    private static let shuttingDownRefusal = Refusal.unavailable(
        "the relay is shutting down; retry shortly (on another instance)", retryAfterSeconds: 1)

    /// What to answer for a log error: every one means "retry later", after a delay that fits it.
    private static func refusal(_ error: LogError) -> Refusal {
        switch error {
        case .logFull, .tenantFull: .unavailable("\(error)", retryAfterSeconds: 30)
        case .overloaded: .unavailable("\(error)", retryAfterSeconds: 1)
        case .storeUnavailable: .unavailable("\(error)", retryAfterSeconds: 2)
        case .closed: .unavailable("the relay is shutting down; retry shortly", retryAfterSeconds: 1)
        default: .unavailable("could not store the events durably: \(error)", retryAfterSeconds: 5)
        }
    }

    /// Counts acknowledged `events` in the metrics.
    private func count(_ events: [Event]) {
        metrics.requestsAcknowledged.increment()
        var registrations = 0
        for event in events { if case .registration = event { registrations += 1 } }
        if registrations > 0 { metrics.registrationsIngested.increment(by: Int64(registrations)) }
        if events.count > registrations { metrics.eventsIngested.increment(by: Int64(events.count - registrations)) }
    }
}

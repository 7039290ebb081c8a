/// What one event's sends have come to, and what to do after each answer: the per-event retry
/// schedule of the upload lane, without I/O.
///
/// An event backs off on its own schedule, so it never holds back the events behind it. A failure
/// counts against the event only while the circuit breaker stays closed (the host answers others);
/// during an outage only the event's age ends its retries.
struct EventRetryStateMachine: Sendable {
    /// What the lane does after an answer.
    enum Decision: Sendable, Hashable {
        /// The host took it: the event is done.
        case delivered
        /// Put the event in the dead-letter store for `reason`, with the host's last answer. When
        /// the store fails, send again after `retryAfterStoreFailure`.
        case giveUp(status: Int, body: String, reason: String, retryAfterStoreFailure: Duration)
        /// Send again after `delay` (zero: at once).
        case retry(after: Duration)
    }

    /// Failures counted against the event before it is given up.
    let maximumAttempts: Int
    /// The age past which a failing event is given up, in nanoseconds.
    let maximumEventAge: Int64
    /// The backoff between counted failures.
    let backoff: Backoff
    /// Sends that reached the wire.
    private(set) var attempts = 0
    /// Failures counted against the event (the breaker stayed closed).
    private(set) var countedFailures = 0

    init(configuration: UploadConfiguration) {
        maximumAttempts = configuration.maximumAttempts
        maximumEventAge = configuration.maximumEventAge.nanoseconds
        backoff = configuration.backoff
    }

    /// The decision after `outcome`.
    ///
    /// - Parameters:
    ///   - breakerOpened: whether this failure opened (or kept open) the circuit breaker: then it
    ///     is the host's failure, not the event's, and it does not count.
    ///   - age: how old the event is now, in nanoseconds.
    mutating func answer(
        _ outcome: DeliveryOutcome, breakerOpened: Bool, age: Int64, using random: inout some RandomNumberGenerator
    ) -> Decision {
        switch outcome {
        case .delivered:
            attempts += 1
            return .delivered
        case .rejected(let status, let body):
            attempts += 1
            return .giveUp(status: status, body: body, reason: "rejected by the host (HTTP \(status))", retryAfterStoreFailure: .seconds(1))
        case .redirected(let status, let location):
            // Only a sender that does not follow redirections returns this: a final answer.
            attempts += 1
            return .giveUp(
                status: status, body: "redirected to \(location)", reason: "redirected, not followed (HTTP \(status))",
                retryAfterStoreFailure: .seconds(1))
        case .notSent:
            // Only a pipeline batch returns this; the event never reached the wire.
            return .retry(after: .zero)
        case .retryable(let reason, let retryAfter, let status, let body):
            attempts += 1
            if !breakerOpened { countedFailures += 1 }
            let delay = retryAfter ?? backoff.delay(attempt: countedFailures, using: &random)
            let tooOld = age > maximumEventAge
            guard countedFailures >= maximumAttempts || tooOld else { return .retry(after: delay) }
            let why =
                tooOld
                ? "older than the maximum event age (\(Duration.nanoseconds(maximumEventAge))) after \(attempts) attempts; last: \(reason)"
                : "\(countedFailures) failed attempts (the maximum) while the host answered others; last: \(reason)"
            return .giveUp(status: status ?? 0, body: status == nil ? reason : body, reason: why, retryAfterStoreFailure: delay)
        }
    }
}

public import Logging
import NIOConcurrencyHelpers
public import PostgresNIO

/// When the PostgreSQL operation under way started, so a session can give up on one that gets
/// no answer (a server gone without closing its connections).
public final class OperationWatch: Sendable {
    private let started = NIOLockedValueBox<ContinuousClock.Instant?>(nil)

    /// A watch with nothing under way.
    public init() {}

    /// An operation starts.
    public func begin() { started.withLockedValue { $0 = .now } }

    /// It ended (answered or failed).
    public func end() { started.withLockedValue { $0 = nil } }

    /// Whether the operation under way started more than `limit` ago.
    func isOverdue(_ limit: Duration) -> Bool {
        started.withLockedValue { start in start.map { ContinuousClock.now - $0 > limit } ?? false }
    }
}

/// The one answer of a session: the work's result, the watch's verdict, or cancellation,
/// whichever comes first.
private final class FirstAnswer<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<Value, any Error>, Never>?
        /// An answer that came before anyone waited (a session cancelled before it began).
        var early: Result<Value, any Error>?
        var answered = false
        /// Whether the answer was the watch's, not the work's.
        var overdue = false
    }

    private let state = NIOLockedValueBox(State())

    func wait(_ continuation: CheckedContinuation<Result<Value, any Error>, Never>) {
        let early: Result<Value, any Error>? = state.withLockedValue { state in
            guard let early = state.early else {
                state.continuation = continuation
                return nil
            }
            return early
        }
        if let early { continuation.resume(returning: early) }
    }

    var isAnswered: Bool { state.withLockedValue { $0.answered } }

    /// Whether the session ended without the work's answer (overdue or cancelled).
    var isOverdueAnswer: Bool { state.withLockedValue { $0.overdue } }

    func answer(_ result: Result<Value, any Error>, overdue: Bool = false) {
        let waiting: CheckedContinuation<Result<Value, any Error>, Never>? = state.withLockedValue { state in
            guard !state.answered else { return nil }
            state.answered = true
            state.overdue = overdue
            guard let waiting = state.continuation else {
                state.early = result
                return nil
            }
            state.continuation = nil
            return waiting
        }
        waiting?.resume(returning: result)
    }
}

extension PostgresLocation {
    /// Runs `body` with one connection of its own to this database, then closes it.
    ///
    /// An operation `body` marks on the watch that gets no answer within `timeout` ends the
    /// session with ``FleetError/database(_:)`` saying so, and closes the connection; cancelling
    /// the caller ends it the same way. A refused connection fails at once. A caller that retries
    /// starts a new session, which connects afresh.
    public func connectedSession<Value: Sendable>(
        timeout: Duration = .seconds(5), logger: Logger, _ body: @escaping @Sendable (PostgresConnection, OperationWatch) async throws -> Value
    ) async throws -> Value {
        let connection: PostgresConnection
        if hostConfigurations.count == 1, !requiresWritable {
            do {
                connection = try await PostgresConnection.connect(configuration: connectionConfiguration, id: 1, logger: logger)
            } catch {
                throw FleetError.database("cannot connect to \(self): \(FleetError.reason(error))")
            }
        } else {
            connection = try await connectWritable(logger: logger)
        }
        let watch = OperationWatch()
        let description = self.description
        // The work runs in a task of its own so that an overdue operation can be given up on even
        // when closing the connection does not end it (PostgresNIO has been seen to leave a query
        // waiting on a connection the server closed): whatever it might still commit is guarded by
        // the position check of every transaction.
        let work = Task { try await body(connection, watch) }
        let first = FirstAnswer<Value>()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, any Error>, Never>) in
                first.wait(continuation)
                Task { first.answer(await work.result) }
                Task {
                    while !first.isAnswered {
                        try? await Task.sleep(for: .milliseconds(200))
                        if watch.isOverdue(timeout) {
                            first.answer(
                                .failure(FleetError.database("no answer from \(description) within \(timeout); closed the connection")), overdue: true
                            )
                        }
                    }
                }
            }
        } onCancel: {
            first.answer(.failure(CancellationError()), overdue: true)
        }
        work.cancel()
        if first.isOverdueAnswer {
            // Not awaited: a connection that stopped answering may not finish closing either. The
            // handler keeps it alive until it has (PostgresNIO requires a connection closed before
            // it goes away).
            connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
        } else {
            try? await connection.close()
        }
        return try result.get()
    }
}

import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// One connection to the log's database, made on first use and made again after any failure: the
/// next call connects afresh to whichever host of the URL is then a writable primary
/// (``PostgresLocation/connectWritable(logger:)``), so a failover needs no restart.
///
/// Every call has a deadline: a server gone without closing its connections (a partition, a
/// synchronous commit waiting for a standby that is gone) fails the call with
/// ``FleetError/database(_:)`` instead of holding the caller for ever; the connection is then
/// dropped, and whether that call's statement took effect is unknown to the caller.
actor PostgresLink {
    /// Where the database is.
    let location: PostgresLocation
    private let logger: Logger
    private let deadline: Duration
    private let connectDeadline: Duration
    private var connection: PostgresConnection?

    /// How long connecting may take, at most, whatever the number of hosts: each host is given
    /// up after PostgresNIO's connect timeout (5 s, ``PostgresLocation``), which a URL of several
    /// hosts that do not answer would otherwise add up.
    static let connectDeadline: Duration = .seconds(10)

    /// A link to `location`, whose calls fail after `deadline` without an answer (and whose
    /// connects fail after `connectDeadline`).
    init(location: PostgresLocation, deadline: Duration = .seconds(5), connectDeadline: Duration = PostgresLink.connectDeadline, logger: Logger) {
        self.location = location
        self.deadline = deadline
        self.connectDeadline = connectDeadline
        self.logger = logger
    }

    /// Runs `body` on the connection (connecting first when there is none, within the connect
    /// deadline), within the link's deadline or `callDeadline` when given (a call no request
    /// waits on, such as opening the stream, may wait longer than an append).
    ///
    /// - Throws: ``FleetError/database(_:)`` when no host will do, the deadline passes, or `body`
    ///   fails; the connection is dropped in each case.
    @discardableResult
    func run<Value: Sendable>(
        deadline callDeadline: Duration? = nil, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> Value
    ) async throws -> Value {
        let (logger, connectDeadline, location) = (self.logger, self.connectDeadline, self.location)
        let deadline = callDeadline ?? self.deadline
        let current: PostgresConnection
        if let connection, !connection.isClosed {
            current = connection
        } else {
            // A connection the server closed (a restart, a failover) never answers a query:
            // waiting for one would cost the whole deadline.
            if let closed = connection { drop(closed) }
            // Not the call's deadline, which may be short (a lease round's lease/3): a connect
            // slowed by a busy server still gets through, as it did before this bound. A
            // connection made after the bound is closed at once.
            let fresh: PostgresConnection
            do {
                fresh = try await Self.firstOf(
                    deadline: connectDeadline, location: location,
                    late: { late in late.close().whenComplete { _ in withExtendedLifetime(late) {} } },
                    { try await location.connectWritable(logger: logger) })
            } catch {
                if let error = error as? FleetError { throw error }
                throw FleetError.database(FleetError.reason(error))
            }
            if let made = connection {
                // Another call connected while this one did (the actor is reentrant across the
                // await): one connection is kept, the other closed.
                fresh.close().whenComplete { _ in withExtendedLifetime(fresh) {} }
                current = made
            } else {
                connection = fresh
                current = fresh
            }
        }
        do {
            return try await Self.firstOf(deadline: deadline, location: location) { try await body(current, logger) }
        } catch {
            drop(current)
            if let error = error as? FleetError { throw error }
            throw FleetError.database(FleetError.reason(error))
        }
    }

    /// `work`'s answer, or a failure once `deadline` passes without one. The work runs in a task
    /// of its own, not a child: PostgresNIO has been seen to leave a query waiting on a connection
    /// the server stopped answering, and a task group would wait for it for ever. The caller
    /// drops (closes) the connection, which ends it. A value the work returns after the deadline
    /// goes to `late` (a connection made too late, to close).
    private static func firstOf<Value: Sendable>(
        deadline: Duration, location: PostgresLocation, late: (@Sendable (Value) -> Void)? = nil,
        _ work: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let answered = NIOLockedValueBox(false)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
            @Sendable func answer(_ result: Result<Value, any Error>) {
                let first = answered.withLockedValue { done in
                    defer { done = true }
                    return !done
                }
                if first {
                    continuation.resume(with: result)
                } else if case .success(let value) = result {
                    late?(value)
                }
            }
            // The timer goes as soon as the work answers: one would otherwise sleep out its
            // deadline after every commit.
            let timer = NIOLockedValueBox<Task<Void, Never>?>(nil)
            let worker = Task {
                do { answer(.success(try await work())) } catch { answer(.failure(error)) }
                timer.withLockedValue { $0?.cancel() }
            }
            let sleeper = Task {
                do { try await Task.sleep(for: deadline) } catch { return }
                worker.cancel()
                answer(.failure(FleetError.database("no answer from \(location) within \(deadline)")))
            }
            timer.withLockedValue { $0 = sleeper }
            if answered.withLockedValue({ $0 }) { sleeper.cancel() }
        }
    }

    deinit {
        // PostgresNIO requires a connection closed before it goes away; a link let go without
        // ``close()`` (a reader dropped, an open that failed) closes its own on the way out.
        if let gone = connection { gone.close().whenComplete { _ in withExtendedLifetime(gone) {} } }
    }

    /// Drops `failed` (a later call connects again); a connection another call made since stays.
    private func drop(_ failed: PostgresConnection) {
        if connection === failed { connection = nil }
        // Not awaited: a connection that stopped answering may not finish closing either; the
        // handler keeps it alive until it has (PostgresNIO requires a connection closed before
        // it goes away).
        failed.close().whenComplete { _ in withExtendedLifetime(failed) {} }
    }

    /// Closes the connection, waiting at most a second for the server's goodbye: a server gone
    /// without closing (a partition, a killed primary) must not hold up a relay that is stopping.
    func close() async {
        guard let gone = connection else { return }
        connection = nil
        let closing: EventLoopFuture<Void> = gone.close()
        closing.whenComplete { _ in withExtendedLifetime(gone) {} }
        _ = try? await Self.firstOf(deadline: .seconds(1), location: location) { try await closing.get() }
    }
}

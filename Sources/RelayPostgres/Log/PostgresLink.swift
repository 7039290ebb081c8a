import Logging
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
    private var connection: PostgresConnection?

    /// A link to `location`, whose calls fail after `deadline` without an answer.
    init(location: PostgresLocation, deadline: Duration = .seconds(5), logger: Logger) {
        self.location = location
        self.deadline = deadline
        self.logger = logger
    }

    /// Runs `body` on the connection (connecting first when there is none).
    ///
    /// - Throws: ``FleetError/database(_:)`` when no host will do, the deadline passes, or `body`
    ///   fails; the connection is dropped in each case.
    @discardableResult
    func run<Value: Sendable>(_ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> Value) async throws -> Value {
        let current: PostgresConnection
        if let connection {
            current = connection
        } else {
            current = try await location.connectWritable(logger: logger)
            connection = current
        }
        let (logger, deadline) = (self.logger, self.deadline)
        do {
            return try await withThrowingTaskGroup(of: Value?.self) { group in
                group.addTask { try await body(current, logger) }
                group.addTask {
                    try await Task.sleep(for: deadline)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let value = first else {
                    throw FleetError.database("no answer from \(location) within \(deadline)")
                }
                return value
            }
        } catch {
            drop()
            if let error = error as? FleetError { throw error }
            throw FleetError.database(FleetError.reason(error))
        }
    }

    deinit {
        // PostgresNIO requires a connection closed before it goes away; a link let go without
        // ``close()`` (a reader dropped, an open that failed) closes its own on the way out.
        if let gone = connection { gone.close().whenComplete { _ in withExtendedLifetime(gone) {} } }
    }

    /// Drops the connection (a later call connects again).
    func drop() {
        guard let gone = connection else { return }
        connection = nil
        // Not awaited: a connection that stopped answering may not finish closing either; the
        // handler keeps it alive until it has (PostgresNIO requires a connection closed before
        // it goes away).
        gone.close().whenComplete { _ in withExtendedLifetime(gone) {} }
    }

    /// Closes the connection.
    func close() async {
        guard let gone = connection else { return }
        connection = nil
        try? await gone.close()
    }
}

package import Logging
import NIOConcurrencyHelpers
import RelayCore

/// The log cursor of a consumer whose own position lives elsewhere (``LogConsumerDeclaration/PositionStore/ownStore``:
/// in SQLite or PostgreSQL, with its counts): it only keeps the log from deleting segments the consumer has not passed. So it is
/// written after the consumer's commits (it may lag), at most once a second unless forced, and a
/// failed write is only logged (segments are then kept a little longer).
package final class RetentionCursor: Sendable {
    /// The cursor's name in `wal/cursors/`.
    package let name: String
    private let log: WriteAheadLog
    private let logger: Logger
    private let lastCommit = NIOLockedValueBox<Int64>(0)

    /// The cursor `name` of `log`.
    package init(name: String, log: WriteAheadLog, logger: Logger) {
        self.name = name
        self.log = log
        self.logger = logger
    }

    /// Moves the cursor to `position`, unless it moved less than a second ago and `force` is false.
    package func commit(to position: UInt64, force: Bool) async {
        let now = SystemClock.monotonicNanoseconds()
        let due = lastCommit.withLockedValue { last in
            guard force || now - last >= 1_000_000_000 else { return false }
            last = now
            return true
        }
        guard due else { return }
        do {
            try await log.commitCursor(name, to: position)
        } catch {
            logger.warning("could not write the log cursor \(name); segments are kept until it succeeds", metadata: ["error": "\(error)"])
        }
    }
}

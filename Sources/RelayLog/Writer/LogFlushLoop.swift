/// The log's flush loop: one task, owned by the ``WriteAheadLog`` that starts it when it opens and
/// joins it when it closes, that commits queued appends whenever it is woken.
///
/// Wake-ups coalesce (at most one is buffered), so appends arriving while a group commit is under
/// way cost no task each: the loop finds them all when the commit is back. The loop holds the log
/// only while it flushes, so a log that is dropped without `close()` ends its loop too.
final class LogFlushLoop: Sendable {
    private let wakeups: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    /// A loop that has not started.
    init() {
        (wakeups, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks the loop to look for queued appends.
    func wake() { continuation.yield() }

    /// Ends the loop once it is done with what it is doing.
    func finish() { continuation.finish() }

    /// Runs until ``finish()`` or until `log` is gone, calling its `flushQueued()` at each wake-up.
    func run(for log: WriteAheadLog) -> Task<Void, Never> {
        let wakeups = wakeups
        return Task { [weak log] in
            for await _ in wakeups {
                guard let log else { return }
                await log.flushQueued()
            }
        }
    }

    deinit { continuation.finish() }
}

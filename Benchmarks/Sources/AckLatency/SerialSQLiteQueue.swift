import BenchmarkSupport
import Dispatch
import RelayCore

/// The SQLite baseline behind one serial thread, as an SDK's persistent queue runs it: appends
/// from many tasks wait their turn, one durable transaction each.
///
/// `@unchecked Sendable` is safe: `queue` (the only stored state besides the immutable dispatch
/// queue) is touched only inside blocks of the serial `thread`, never concurrently.
final class SerialSQLiteQueue: @unchecked Sendable {
    private let queue: SQLiteEventQueue
    private let thread = DispatchQueue(label: "ack-latency.sqlite")

    init(path: String) throws {
        queue = try SQLiteEventQueue(path: path)
    }

    /// Appends `events` in one transaction once earlier appends are done; returns when it is durable.
    func append(_ events: [Event]) async throws {
        let outcome: Result<Void, any Error> = await withCheckedContinuation { continuation in
            thread.async {
                do {
                    try self.queue.append(events)
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        try outcome.get()
    }
}

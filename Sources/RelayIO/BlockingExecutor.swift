import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#endif

/// A thread of its own for blocking calls (SQLite, `pread`, `pwrite`, `fdatasync`, `rename`), so
/// they never hold one of Swift's few cooperative threads while the disk works.
///
/// Two ways in, one thread:
/// - as an actor's serial executor (`unownedExecutor`), so everything the actor does runs on this
///   thread: the model of GRDB's `SerializedDatabase`, where one queue owns a connection and
///   async callers come through one door;
/// - ``run(_:)`` for a closure, for owners that are not actors (the log's writer).
///
/// Background work (aggregation, forwarding) gets a positive ``Priority/niceness``, so the
/// kernel prefers the threads that answer requests when both want a core.
///
/// The thread ends when the executor is released (after the last job that references it).
public final class BlockingExecutor: SerialExecutor, Sendable {
    /// How the kernel schedules the executor's thread against the others.
    public enum Priority: Sendable, Hashable {
        /// The default: as important as request handling (the log's writer, the stores requests wait on).
        case normal
        /// Background work that must not take a core from request handling.
        case background

        /// The nice value given to the thread (Linux nice values are per thread).
        public var niceness: Int32 {
            switch self {
            case .normal: 0
            case .background: 5
            }
        }

        /// Gives the calling thread this priority (for threads the relay does not start itself,
        /// such as an event loop's).
        public func applyToCurrentThread() {
            guard niceness != 0 else { return }
            // `who` 0 is the calling thread: on Linux the nice value belongs to each thread.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
        }
    }

    /// The thread's name, as `top -H` and `perf` show it (Linux keeps its first 15 bytes).
    public let name: String
    private let queue: WorkQueue

    /// Starts the thread.
    public init(name: String, priority: Priority = .normal) {
        self.name = name
        let queue = WorkQueue()
        self.queue = queue
        let thread = Thread {
            BlockingExecutor.nameCurrentThread(name)
            BlockingExecutor.registry.withLockedValue { _ = $0.insert(pthread_self()) }
            priority.applyToCurrentThread()
            queue.runUntilStopped()
            BlockingExecutor.registry.withLockedValue { _ = $0.remove(pthread_self()) }
        }
        thread.start()
    }

    deinit {
        queue.stop()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.add { job.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Runs `work` on the executor's thread, after what is queued before it, and returns its result.
    public func run<Value, Failure: Error>(
        _ work: @escaping @Sendable () throws(Failure) -> sending Value
    ) async throws(Failure) -> sending Value {
        let result: Result<Value, Failure> = await withUnsafeContinuation { continuation in
            queue.add {
                do throws(Failure) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Runs `work` on the executor's thread with `value` moved there, and hands `value` back with
    /// the outcome, whether `work` succeeded or failed: for a value that owns blocking resources
    /// (a log reader, a segment writer) and must come home either way.
    public func run<Owned: Sendable, Value: Sendable, Failure: Error>(
        moving value: Owned, _ work: @escaping @Sendable (inout Owned) throws(Failure) -> Value
    ) async -> (Owned, Result<Value, Failure>) {
        await run { () -> (Owned, Result<Value, Failure>) in
            var owned = value
            do throws(Failure) {
                // Work first: the tuple takes `owned` as it is when the tuple is built.
                let result = try work(&owned)
                return (owned, .success(result))
            } catch {
                return (owned, .failure(error))
            }
        }
    }

    /// Gives the calling thread its name as `top -H`, `ps -L` and `perf` show it. Foundation's
    /// `Thread.name` reaches the OS thread only when it wins a race with the thread's start, so
    /// the name is written where Linux keeps it; Linux keeps 15 bytes and refuses longer names.
    static func nameCurrentThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }

    /// Whether the calling thread belongs to a ``BlockingExecutor``: the place where blocking calls
    /// may be made. SQLite checks it on every call in debug builds.
    public static var isCurrentThreadBlocking: Bool {
        registry.withLockedValue { $0.contains(pthread_self()) }
    }

    private static let registry = NIOLockedValueBox<Set<pthread_t>>([])
}

/// The jobs waiting for an executor's thread, first in first out.
final class WorkQueue: Sendable {
    private struct State {
        /// Jobs from ``head`` on are waiting; the slots before it are `nil`, so that a job that has
        /// run releases at once what it captured (a group commit's events, a batch read ahead).
        /// Keeping run jobs until the array was compacted held up to 1,024 group commits' events,
        /// some 100 MB under batch ingest.
        var items: [(@Sendable () -> Void)?] = []
        var head = 0
        var stopped = false
    }

    private let state = NIOLockedValueBox(State())
    private let available = DispatchSemaphore(value: 0)

    func add(_ item: @escaping @Sendable () -> Void) {
        state.withLockedValue { $0.items.append(item) }
        available.signal()
    }

    func stop() {
        state.withLockedValue { $0.stopped = true }
        available.signal()
    }

    /// Runs items as they come until ``stop()`` and the queue is empty.
    func runUntilStopped() {
        while true {
            available.wait()
            let next: (@Sendable () -> Void)? = state.withLockedValue { state in
                guard state.head < state.items.count else { return nil }
                let item = state.items[state.head]
                state.items[state.head] = nil
                state.head += 1
                // Drop what has run now and then, instead of shifting the array on every job.
                if state.head >= 1024, state.head * 2 >= state.items.count {
                    state.items.removeFirst(state.head)
                    state.head = 0
                }
                return item
            }
            if let next {
                next()
            } else if state.withLockedValue({ $0.stopped }) {
                return
            }
        }
    }
}

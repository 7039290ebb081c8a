import Foundation
import NIOConcurrencyHelpers

/// A task executor with one thread of its own, for tests that compute for long stretches (seeded
/// power losses over an in-memory file system): run under ``run(_:)``, their code and the default
/// actors they call run on this thread, not on the cooperative pool.
///
/// All suites share the process's cooperative pool, two threads on two cores. A test that keeps
/// both busy for minutes makes every other test's `await` wait its turn, and their deadlines and
/// time limits expire although nothing hangs: a 6-second retention test ran past its 3-minute
/// limit on CI. On a thread of its own, the long computation competes for the cores through the
/// kernel's scheduler, which shares them, and the pool stays free for the others.
public final class DedicatedThreadExecutor: TaskExecutor, Sendable {
    private let jobs = NIOLockedValueBox<[UnownedJob]>([])
    private let waiting = DispatchSemaphore(value: 0)
    private let thread = NIOLockedValueBox<pthread_t?>(nil)

    /// Starts the thread, named `name`; it lives as long as the test process.
    public init(name: String) {
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            self.thread.withLockedValue { $0 = pthread_self() }
            started.signal()
            while true {
                waiting.wait()
                let job = jobs.withLockedValue { $0.removeFirst() }
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
        thread.name = name
        thread.start()
        started.wait()
    }

    /// Whether the caller runs on this executor's thread.
    public func ownsCurrentThread() -> Bool {
        thread.withLockedValue { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Queues `job` for the thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        jobs.withLockedValue { $0.append(unowned) }
        waiting.signal()
    }

    /// Runs `operation` with this executor preferred for it and for every default actor it calls.
    public func run<T>(isolation: isolated (any Actor)? = #isolation, _ operation: () async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(self, isolation: isolation, operation: operation)
    }
}

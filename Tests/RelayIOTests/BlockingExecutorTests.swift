import NIOConcurrencyHelpers
import RelayIO
import TestTiers
import Testing

/// The threads the log, the aggregator and the stores make their blocking calls on.
@Suite("Blocking executors", .tier(.fast))
struct BlockingExecutorTests {
    /// Stands for what a job captures (a group commit's events): tells when it is freed.
    final class Payload: Sendable {
        let freed: NIOLockedValueBox<Int>
        init(freed: NIOLockedValueBox<Int>) { self.freed = freed }
        deinit { freed.withLockedValue { $0 += 1 } }
    }

    @Test("a job that has run releases what it captured at once, not when the queue is next compacted")
    func ranJobsReleaseTheirCaptures() async {
        let executor = BlockingExecutor(name: "test-release")
        let freed = NIOLockedValueBox(0)
        for round in 1...10 {
            let payload = Payload(freed: freed)
            let sum = await executor.run { () -> Int in payload.freed.withLockedValue { $0 } + round }
            #expect(sum >= round)
        }
        // Once `run` has answered, only the executor's queue could still hold a payload; the freeing
        // itself happens on the executor's thread right after the job, so let a last job pass.
        await executor.run { () -> Void in }
        #expect(freed.withLockedValue { $0 } == 10, "payloads still held by jobs that have run")
    }
}

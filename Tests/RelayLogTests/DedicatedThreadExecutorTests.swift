import Foundation
import RelayTestSupport
import TestTiers
import Testing

/// The premise of the long simulations (``CrashSimulationTests``, the archive-move crashes): under
/// ``DedicatedThreadExecutor/run(isolation:_:)`` the test's code and the default actors it calls
/// (the log is one) run on the executor's thread, not on the cooperative pool.
@Suite("A dedicated thread for long simulations", .tier(.fast))
struct DedicatedThreadExecutorTests {
    actor Probe {
        func onThreadOf(_ executor: DedicatedThreadExecutor) -> Bool { executor.ownsCurrentThread() }
    }

    @Test("the operation and a default actor it awaits both run on the executor's thread")
    func runsOnItsThread() async throws {
        let executor = DedicatedThreadExecutor(name: "executor-test")
        let probe = Probe()
        let placed = try await executor.run { () async -> [Bool] in
            let before = executor.ownsCurrentThread()
            let inActor = await probe.onThreadOf(executor)
            let after = executor.ownsCurrentThread()
            return [before, inActor, after]
        }
        #expect(placed == [true, true, true])
        #expect(await probe.onThreadOf(executor) == false, "outside run, the actor runs on the pool")
        #expect(executor.ownsCurrentThread() == false)
    }
}

import NIOConcurrencyHelpers
import RelayIO
import TestTiers
import Testing

/// Steps of an actor that span awaits, one at a time and in the order asked.
@Suite("Turn queue", .timeLimit(.minutes(10)), .tier(.fast))
struct TurnQueueTests {
    /// Steps that each await inside their turn: none overlaps another, and they run in the order
    /// they asked.
    actor Steps {
        let turns = TurnQueue()
        var running = 0
        var overlaps = 0
        var order: [Int] = []

        func step(_ number: Int) async {
            await turns.take()
            defer { turns.end() }
            running += 1
            if running > 1 { overlaps += 1 }
            order.append(number)
            // Lets every other call into the actor while this one holds the turn.
            for _ in 0..<3 { await Task.yield() }
            running -= 1
        }
    }

    @Test("200 steps that await inside their turn never overlap")
    func exclusive() async {
        let steps = Steps()
        await withTaskGroup(of: Void.self) { group in
            for number in 0..<200 { group.addTask { await steps.step(number) } }
        }
        #expect(await steps.overlaps == 0)
        #expect(await steps.order.sorted() == Array(0..<200))
    }

    @Test("a turn ended goes to the first waiting, in the order they asked")
    func firstInFirstServed() async throws {
        let turns = TurnQueue()
        await turns.take()
        let order = NIOLockedValueBox<[Int]>([])
        var waiters: [Task<Void, Never>] = []
        for number in 1...5 {
            waiters.append(
                Task {
                    await turns.take()
                    order.withLockedValue { $0.append(number) }
                    turns.end()
                })
            // The next asks only once this one waits.
            while turns.waiting < number { try await Task.sleep(for: .milliseconds(1)) }
        }
        turns.end()
        for waiter in waiters { await waiter.value }
        #expect(order.withLockedValue { $0 } == [1, 2, 3, 4, 5])
    }
}

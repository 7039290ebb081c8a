import RelayForwarding
import TestTiers
import Testing

/// The decisions of adaptive concurrency on sequences of answers, on a clock of their own.
@Suite("Adaptive concurrency: the state machine", .tier(.fast))
struct AdaptiveConcurrencyTests {
    static let start = ContinuousClock.now

    /// One window: `inFlight` requests started at `at` ms (the limit used in full when it equals
    /// the limit), then each ends with its signal after `roundTrip` ms, the last one once the
    /// window is long enough to close (`micro` µs added to each round trip); the change the window closed with.
    static func window(
        _ machine: inout AdaptiveConcurrency, at: Int, roundTrip: Int, signals: [AdaptiveConcurrency.Signal], inFlight: Int? = nil,
        micro: Int = 0
    ) -> AdaptiveConcurrency.Change? {
        let began = start + .milliseconds(at)
        let used = inFlight ?? machine.limit
        for index in 0..<used { machine.started(inFlight: index + 1, now: began) }
        var change: AdaptiveConcurrency.Change?
        for (index, signal) in signals.enumerated() {
            let at = index == signals.count - 1 ? began + .milliseconds(max(roundTrip, 40)) : began + .microseconds(100)
            if let closed = machine.ended(signal, roundTrip: .milliseconds(roundTrip) + .microseconds(micro), now: at) { change = closed }
        }
        return change
    }

    @Test("it starts at one, adds one per window while the round trip is no longer than the baseline and the limit is used, and stops at the ceiling")
    func additiveIncrease() {
        var machine = AdaptiveConcurrency(settings: .init(ceiling: 4))
        #expect(machine.limit == 1 && machine.baseline == nil)
        var limits: [Int] = []
        var changes: [AdaptiveConcurrency.Change?] = []
        for round in 0..<5 {
            changes.append(Self.window(&machine, at: round * 50, roundTrip: 2, signals: Array(repeating: .answered, count: machine.limit)))
            limits.append(machine.limit)
        }
        #expect(limits == [2, 3, 4, 4, 4])
        #expect(changes == [.increased, .increased, .increased, .held, .held])
        #expect(machine.baseline == .milliseconds(2) && machine.roundTrip == .milliseconds(2))
    }

    @Test("a limit not used in full does not grow: the host's room is not known beyond it")
    func unusedLimitHolds() {
        var machine = AdaptiveConcurrency(settings: .init(ceiling: 8))
        _ = Self.window(&machine, at: 0, roundTrip: 2, signals: [.answered])
        _ = Self.window(&machine, at: 50, roundTrip: 2, signals: [.answered, .answered])
        #expect(machine.limit == 3)
        #expect(Self.window(&machine, at: 100, roundTrip: 2, signals: [.answered], inFlight: 1) == .held)
        #expect(machine.limit == 3)
    }

    @Test("a 429, 503 or timeout halves the limit once per window, however many requests of the window failed; never below one")
    func overloadHalves() {
        var machine = AdaptiveConcurrency(settings: .init(ceiling: 16))
        for round in 0..<7 { _ = Self.window(&machine, at: round * 50, roundTrip: 2, signals: Array(repeating: .answered, count: machine.limit)) }
        #expect(machine.limit == 8)
        // The first overload closes the window: the other failures of the same requests fall in the next.
        let began = Self.start + .milliseconds(400)
        for index in 0..<8 { machine.started(inFlight: index + 1, now: began) }
        #expect(machine.ended(.overloaded, roundTrip: .milliseconds(1), now: began + .milliseconds(1)) == .decreasedOnOverload)
        #expect(machine.limit == 4)
        #expect(machine.ended(.overloaded, roundTrip: .milliseconds(1), now: began + .milliseconds(1)) == .decreasedOnOverload)
        #expect(machine.limit == 2)
        #expect(Self.window(&machine, at: 450, roundTrip: 2, signals: [.overloaded]) == .decreasedOnOverload)
        #expect(machine.limit == 1)
        #expect(Self.window(&machine, at: 500, roundTrip: 2, signals: [.overloaded]) == .decreasedOnOverload)
        #expect(machine.limit == 1)
    }

    @Test("a round trip past twice the baseline (and 4 deviations above it) halves the limit; between 1.5 and 2 times it holds")
    func risingRoundTrip() {
        var machine = AdaptiveConcurrency(settings: .init(ceiling: 16))
        for round in 0..<5 { _ = Self.window(&machine, at: round * 50, roundTrip: 4, signals: Array(repeating: .answered, count: machine.limit)) }
        #expect(machine.limit == 6 && machine.baseline == .milliseconds(4) && machine.deviation == .zero)
        #expect(Self.window(&machine, at: 300, roundTrip: 7, signals: Array(repeating: .answered, count: 6)) == .held)
        #expect(machine.limit == 6)
        // The 7 ms window moved the average to 5.2 ms and the deviation to 1.2 ms: rising is past
        // 4 + max(4, 2, 4 × 1.2) = 8.8 ms.
        #expect(machine.averageRoundTrip == .microseconds(5_200) && machine.deviation == .microseconds(1_200))
        #expect(Self.window(&machine, at: 350, roundTrip: 9, signals: Array(repeating: .answered, count: 6)) == .decreasedOnRisingRoundTrip)
        #expect(machine.limit == 3 && machine.roundTrip == .milliseconds(9))
        #expect(machine.baseline == .milliseconds(4), "a slower window does not move the baseline within its horizon")
    }

    @Test(
        "a relay short of CPU, its round trips 5 and 15 ms by turns: once the spread is known, none of it reads as a rise, and the limit climbs to the ceiling"
    )
    func noisyRoundTripsStillGrow() {
        var machine = AdaptiveConcurrency(settings: .init(ceiling: 8))
        var changes: [AdaptiveConcurrency.Change?] = []
        for round in 0..<20 {
            changes.append(
                Self.window(&machine, at: round * 50, roundTrip: round % 2 == 0 ? 5 : 15, signals: Array(repeating: .answered, count: machine.limit)))
        }
        #expect(machine.limit == 8)
        // The first 15 ms window, before any spread was seen, is the only decrease.
        #expect(changes.indices.filter { changes[$0] == .decreasedOnRisingRoundTrip } == [1])
        #expect(changes.filter { $0 == .increased }.count == 8)
    }

    @Test(
        "a host slower for good (10 ms, then 30 ms): the limit falls to one and stays; 10 s after the last 10 ms window the baseline is 30 ms and the limit grows again"
    )
    func baselineFollowsTheHost() {
        var machine = AdaptiveConcurrency(settings: .init(ceiling: 8))
        // One window a second.
        for round in 0..<4 { _ = Self.window(&machine, at: round * 1_000, roundTrip: 10, signals: Array(repeating: .answered, count: machine.limit)) }
        #expect(machine.limit == 5 && machine.baseline == .milliseconds(10))
        var changes: [AdaptiveConcurrency.Change?] = []
        for round in 4..<30 {
            changes.append(Self.window(&machine, at: round * 1_000, roundTrip: 30, signals: Array(repeating: .answered, count: machine.limit)))
        }
        #expect(changes.first == .decreasedOnRisingRoundTrip)
        #expect(changes.prefix(10).allSatisfy { $0 == .decreasedOnRisingRoundTrip || $0 == .held }, "\(changes)")
        // The last 10 ms window closed at 3.04 s; the one closing at 13.04 s finds its baseline
        // 10 s old and takes 30 ms; the next grows.
        #expect(changes.firstIndex(of: .increased) == 10, "\(changes)")
        #expect(changes[10...].allSatisfy { $0 != .decreasedOnRisingRoundTrip })
        #expect(machine.limit == 8 && machine.baseline == .milliseconds(30))
    }

    @Test("once the baseline is 10 s old it becomes the fastest window since it, not the last one")
    func baselineIsTheFastestOfTheHorizon() {
        var machine = AdaptiveConcurrency(settings: .init(ceiling: 8))
        _ = Self.window(&machine, at: 0, roundTrip: 10, signals: [.answered])
        for (second, roundTrip) in [(2, 30), (4, 20), (6, 30), (8, 30), (9, 30)] {
            _ = Self.window(&machine, at: second * 1_000, roundTrip: roundTrip, signals: Array(repeating: .answered, count: machine.limit))
        }
        #expect(machine.baseline == .milliseconds(10), "younger than 10 s: kept")
        _ = Self.window(&machine, at: 11_000, roundTrip: 30, signals: Array(repeating: .answered, count: machine.limit))
        #expect(machine.baseline == .milliseconds(20))
    }

    @Test("a host answering in 200 µs: round trips up to 1 ms above it are near, up to 2 ms above it hold, beyond that (and 4 deviations) halve")
    func slackForFastHosts() {
        var machine = AdaptiveConcurrency(settings: .init(ceiling: 16))
        let window = { (machine: inout AdaptiveConcurrency, at: Int, microseconds: Int) -> AdaptiveConcurrency.Change? in
            let began = Self.start + .milliseconds(at)
            for index in 0..<machine.limit { machine.started(inFlight: index + 1, now: began) }
            return machine.ended(.answered, roundTrip: .microseconds(microseconds), now: began + .milliseconds(40))
        }
        #expect(window(&machine, 0, 200) == .increased)
        #expect(window(&machine, 50, 1_200) == .increased, "1.2 ms is within 1 ms of 0.2 ms")
        #expect(machine.limit == 3 && machine.deviation == .microseconds(400))
        var twin = machine
        #expect(window(&machine, 100, 2_100) == .held, "2.1 ms: not near, not past 0.2 + max(0.2, 2, 4 × 0.4) ms")
        #expect(window(&twin, 100, 2_300) == .decreasedOnRisingRoundTrip)
        #expect(twin.limit == 1 && twin.baseline == .microseconds(200))
    }

    @Test("an answer that says nothing of the host's load (not sent) changes nothing and closes no window")
    func ignoredSignals() {
        var machine = AdaptiveConcurrency(settings: .init(ceiling: 4))
        machine.started(inFlight: 1, now: Self.start)
        #expect(machine.ended(.ignored, roundTrip: .milliseconds(50), now: Self.start + .seconds(1)) == nil)
        #expect(machine.limit == 1 && machine.baseline == nil && machine.roundTrip == nil)
    }

    @Test("a window lasts a round trip at the baseline, at least 5 ms: answers before then close none")
    func windowLength() {
        var machine = AdaptiveConcurrency(settings: .init(ceiling: 4))
        machine.started(inFlight: 1, now: Self.start)
        #expect(machine.ended(.answered, roundTrip: .milliseconds(20), now: Self.start + .milliseconds(3)) == nil)
        // The first window has no baseline yet: 5 ms.
        #expect(machine.ended(.answered, roundTrip: .milliseconds(20), now: Self.start + .milliseconds(5)) == .increased)
        #expect(machine.baseline == .milliseconds(20))
        let next = Self.start + .milliseconds(10)
        machine.started(inFlight: 1, now: next)
        #expect(machine.ended(.answered, roundTrip: .milliseconds(20), now: next + .milliseconds(19)) == nil)
        #expect(machine.ended(.answered, roundTrip: .milliseconds(20), now: next + .milliseconds(20)) == .held, "the limit (2) was not used in full")
    }
}

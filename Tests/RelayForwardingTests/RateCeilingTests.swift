import RelayForwarding
import TestTiers
import Testing

/// The rate ceiling's decisions on a clock of its own.
@Suite("Rate ceiling: the state machine", .tier(.fast))
struct RateCeilingTests {
    /// A lane with a backlog from `from` to `until`: it starts a request whenever the ceiling lets
    /// it, and otherwise waits exactly as long as it is told. The start times.
    static func greedy(_ ceiling: inout RateCeiling, from: Double, until: Double) -> [Double] {
        var now = from
        var starts: [Double] = []
        while now < until {
            switch ceiling.request(now: now) {
            case .start: starts.append(now)
            case .wait(let until):
                #expect(until > now, "told to wait until \(until) at \(now)")
                now = max(until, now + 1e-9)
            }
        }
        return starts
    }

    @Test("a backlog under max-rate 500: exactly 500 starts in each second of the clock, none in its last 100 ms, at most a 20 ms burst at once")
    func backlogStartsTheRateEachSecond() {
        var ceiling = RateCeiling(rate: 500)
        let starts = Self.greedy(&ceiling, from: 1_000, until: 1_005)
        var perSecond: [Int: Int] = [:]
        for start in starts { perSecond[Int(start), default: 0] += 1 }
        #expect(perSecond == [1_000: 500, 1_001: 500, 1_002: 500, 1_003: 500, 1_004: 500])
        #expect(starts.allSatisfy { $0 - $0.rounded(.down) < 0.9 }, "a start in the quiet tail")
        // Evenly: no 100 ms holds more than its share at the fill rate (55.6) and the burst (10).
        var most = 0
        var low = 0
        for high in starts.indices {
            while starts[high] - starts[low] >= 0.1 { low += 1 }
            most = max(most, high - low + 1)
        }
        #expect(most <= 66, "\(most) starts within 100 ms")
        #expect(most >= 55)
    }

    @Test("after a pause the bucket holds 10 tokens (max-rate 500): that many start at once, the next 1.8 ms later")
    func burstAfterAPause() {
        var ceiling = RateCeiling(rate: 500)
        #expect(ceiling.request(now: 2_000.0) == .start)
        var started = 0
        while case .start = ceiling.request(now: 2_000.5) { started += 1 }
        #expect(started == 10)
        guard case .wait(let until) = ceiling.request(now: 2_000.5) else {
            Issue.record("an eleventh start in the same instant")
            return
        }
        #expect(abs(until - (2_000.5 + 0.9 / 500)) < 1e-9, "\(until)")
    }

    @Test("a request in the last 100 ms of a second waits for the next second; max-rate 1 starts one a second")
    func quietTailAndRateOne() {
        var ceiling = RateCeiling(rate: 1)
        #expect(ceiling.request(now: 3_000.95) == .wait(until: 3_001))
        #expect(ceiling.request(now: 3_001.0) == .start)
        #expect(ceiling.request(now: 3_001.2) == .wait(until: 3_002))
        let starts = Self.greedy(&ceiling, from: 3_002, until: 3_006)
        #expect(starts == [3_002, 3_003, 3_004, 3_005])
    }
}

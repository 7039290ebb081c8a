import CampaignProtocol
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayForwarding

@Suite("Retry policy", .tier(.fast))
struct RetryPolicyTests {
    @Test(
        "exactly 200 is success; the listed statuses retry; everything else is permanent",
        arguments: [200, 201, 204, 301, 400, 401, 404, 408, 425, 429, 500, 501, 502, 503, 504, 507])
    func classification(status: Int) {
        let outcome = DeliveryOutcome.classify(status: status, retryAfter: nil, body: "b", now: 0)
        switch status {
        case 200: #expect(outcome == .delivered)
        case 408, 425, 429, 500, 502, 503, 504, 507:
            #expect(outcome == .retryable(reason: "HTTP \(status)", retryAfter: nil, status: status, body: "b"))
        default: #expect(outcome == .rejected(status: status, body: "b"))
        }
    }

    @Test("--retry-status replaces the retried set: 501 retried, 500 then permanent")
    func configuredRetryStatuses() {
        #expect(
            DeliveryOutcome.classify(status: 501, retryAfter: nil, body: "x", now: 0, retryStatuses: [501])
                == .retryable(reason: "HTTP 501", retryAfter: nil, status: 501, body: "x"))
        #expect(DeliveryOutcome.classify(status: 500, retryAfter: nil, body: "x", now: 0, retryStatuses: [501]) == .rejected(status: 500, body: "x"))
    }

    @Test("Retry-After: seconds and the three HTTP-date forms")
    func retryAfter() {
        // 1994-11-06T08:49:37Z is 784111777.
        let now = 784_111_777.0 - 30
        #expect(RetryAfter.delay("120", now: now) == .seconds(120))
        #expect(RetryAfter.delay(" 0 ", now: now) == .zero)
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.delay("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.delay("Sun Nov  6 08:49:37 1994", now: now) == .seconds(30))
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:49:37 GMT", now: now + 100) == .zero)
        #expect(RetryAfter.delay("999999999", now: now) == RetryAfter.maximum)
        #expect(RetryAfter.delay("soon", now: now) == nil)
        #expect(RetryAfter.delay("-5", now: now) == nil)
        #expect(RetryAfter.parseHTTPDate("Sun Nov  6 -22:49:37 1994") == nil, "a negative hour is no time")
        #expect(RetryAfter.parseHTTPDate("Sun Nov  6 +8:49:37 1994") == nil, "a signed hour is no time")
    }

    @Test("full-jitter backoff stays within min(cap, base·2^n) and spreads")
    func backoff() {
        let backoff = Backoff(base: .milliseconds(100), cap: .seconds(2))
        #expect(backoff.ceiling(attempt: 0) == .milliseconds(100))
        #expect(backoff.ceiling(attempt: 3) == .milliseconds(800))
        #expect(backoff.ceiling(attempt: 5) == .seconds(2))
        #expect(backoff.ceiling(attempt: 200) == .seconds(2))
        var generator = SeededGenerator(seed: 101)
        let delays = (0..<500).map { _ in backoff.delay(attempt: 3, using: &generator) }
        #expect(delays.allSatisfy { $0 >= .zero && $0 <= .milliseconds(800) })
        #expect(Set(delays.map { $0.components.attoseconds / 10_000_000_000_000_000 }).count > 20, "delays must be spread, not fixed")
    }

    @Test("breaker: opens after the threshold, waits, lets one probe through, closes on an answer")
    func breaker() {
        var generator = SeededGenerator(seed: 102)
        var breaker = CircuitBreakerStateMachine(threshold: 3, backoff: Backoff(base: .milliseconds(100), cap: .seconds(1)))
        let start = ContinuousClock.now
        #expect(breaker.permission(now: start) == .proceed)
        #expect(breaker.recordFailure(now: start, retryAfter: nil, using: &generator) == nil)
        #expect(breaker.recordFailure(now: start, retryAfter: nil, using: &generator) == nil)
        let until = breaker.recordFailure(now: start, retryAfter: nil, using: &generator)
        guard let until else {
            Issue.record("the third failure must open the breaker")
            return
        }
        #expect(until > start && until <= start + .milliseconds(100))
        #expect(breaker.permission(now: start) == .waitUntil(until))
        // After the wait exactly one probe goes; the others wait for its answer.
        #expect(breaker.permission(now: until) == .proceed)
        #expect(breaker.permission(now: until) == .waitForProbe)
        // The probe fails: open again, longer.
        let again = breaker.recordFailure(now: until, retryAfter: nil, using: &generator)
        #expect(again.map { $0 > until } == true)
        #expect(breaker.failingSince == start)
        // Retry-After is believed as it is.
        let told = breaker.recordFailure(now: until, retryAfter: .seconds(7), using: &generator)
        #expect(told == until + .seconds(7))
        breaker.recordAnswer()
        #expect(breaker.permission(now: until) == .proceed)
        #expect(breaker.failingSince == nil)
    }

    @Test("breaker: a probe granted but not sent (its event erased meanwhile) passes to the next request, which is the probe")
    func probeNotSent() {
        var generator = SeededGenerator(seed: 103)
        var breaker = CircuitBreakerStateMachine(threshold: 1, backoff: Backoff(base: .milliseconds(100), cap: .seconds(1)))
        let start = ContinuousClock.now
        guard let until = breaker.recordFailure(now: start, retryAfter: nil, using: &generator) else {
            Issue.record("the first failure must open the breaker at threshold 1")
            return
        }
        #expect(breaker.permission(now: until) == .proceed)
        #expect(breaker.permission(now: until) == .waitForProbe)
        breaker.probeNotSent()
        #expect(breaker.permission(now: until) == .proceed, "the next request probes")
        #expect(breaker.permission(now: until) == .waitForProbe, "and only it")
        breaker.recordAnswer()
        breaker.probeNotSent()
        #expect(breaker.permission(now: until) == .proceed, "a closed breaker stays closed")
    }

    @Test("a Retry-After opens the breaker at once, without waiting for the threshold")
    func retryAfterOpensAtOnce() {
        var generator = SeededGenerator(seed: 104)
        var breaker = CircuitBreakerStateMachine(threshold: 5, backoff: Backoff())
        let now = ContinuousClock.now
        #expect(breaker.recordFailure(now: now, retryAfter: .seconds(2), using: &generator) == now + .seconds(2))
        #expect(breaker.permission(now: now + .seconds(1)) == .waitUntil(now + .seconds(2)))
    }
}

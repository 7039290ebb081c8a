import RelayCore
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayForwarding

/// The upload lane's decisions, driven by hand: no log, no network, no clock but the one given.
@Suite("Upload lane state machine", .tier(.fast))
struct UploadLaneStateMachineTests {
    static let t0 = ContinuousClock.now

    static func hits(_ sequences: ClosedRange<UInt64>) -> [SequencedEvent] {
        sequences.map { SequencedEvent(sequence: $0, event: hit(Int($0))) }
    }

    static func settings(
        concurrency: Int = 8, unsynced: Int = 4096, batchSize: Int? = nil, savesCursor: Bool = true, end: UInt64? = nil,
        kind: UploadLane.Kind = .tracking, times: Range<Int64>? = nil
    ) -> UploadLaneStateMachine.Settings {
        .init(
            kind: kind, times: times, concurrency: concurrency, maximumUnsyncedEvents: unsynced, batchSize: batchSize, savesCursor: savesCursor,
            end: end)
    }

    /// A compact spelling of an action, for exact comparisons.
    static func describe(_ action: UploadLaneStateMachine.Action) -> String {
        switch action {
        case .read(let from): "read \(from)"
        case .send(let event): "send \(event.sequence)"
        case .sendBatch(let events): "batch \(events.map { String($0.sequence) }.joined(separator: ","))"
        case .saveCursor(let position): "save \(position)"
        case .awaitCompletion: "await"
        case .awaitEvents(let beyond): "await events \(beyond)"
        case .sleep: "sleep"
        case .finish: "finish"
        }
    }

    /// Runs the machine until it waits (a completion, new events, time) or finishes, answering
    /// reads from `log` (events below `limit`) and acknowledging saves. Returns what it did.
    static func step(
        _ machine: inout UploadLaneStateMachine, log: [SequencedEvent], limit: UInt64, now: ContinuousClock.Instant = t0
    ) -> [String] {
        var done: [String] = []
        while true {
            let action = machine.nextAction(now: now)
            done.append(describe(action))
            switch action {
            case .read(let from):
                machine.read(log.filter { $0.sequence >= from && $0.sequence < limit }, limit: limit)
            case .saveCursor(let position):
                machine.cursorSaved(position, now: now)
            case .send, .sendBatch:
                continue
            case .awaitCompletion, .awaitEvents, .sleep, .finish:
                return done
            }
        }
    }

    @Test("a lane that passes over the last events it reads saves its cursor past them before it waits for more")
    func passingOverSavesBeforeWaiting() {
        // The marketing lane over 10 hits, reading 4 at a time with a duplicate bound of 4: every
        // read fills the bound, so a save comes between reads, and the last read ends below it.
        var machine = UploadLaneStateMachine(settings: Self.settings(unsynced: 4, kind: .marketing), start: 1)
        let log = Self.hits(1...10)
        var actions: [String] = []
        reading: while actions.count < 20 {
            let action = machine.nextAction(now: Self.t0)
            actions.append(Self.describe(action))
            switch action {
            case .read(let from): machine.read(Array(log.filter { $0.sequence >= from }.prefix(4)), limit: 11)
            case .saveCursor(let position): machine.cursorSaved(position, now: Self.t0)
            default: break reading
            }
        }
        #expect(actions == ["read 1", "save 5", "read 5", "save 9", "read 9", "read 11", "save 11", "await events 11"])
        #expect(machine.progress.durableCursor == 11)
        #expect(machine.passedOver == 10)
    }

    @Test(
        "the oldest owed event is the one at the lane's position: out-of-order completions do not move it, passed-over events are not owed, nil once all are done"
    )
    func oldestOwedEvent() {
        var machine = UploadLaneStateMachine(settings: Self.settings(concurrency: 3), start: 1)
        // Event i happened at second 100 + i; event 2 is a registration, which the tracking lane passes over.
        let log = (1...5).map { index in
            let time = EventTime(nanosecondsSinceEpoch: Int64(100 + index) * 1_000_000_000)
            guard index != 2 else { return SequencedEvent(sequence: 2, event: registration(token: "t", time: time)) }
            guard case .tracking(var hit) = hit(index) else { return SequencedEvent(sequence: UInt64(index), event: hit(index)) }
            hit.time = time
            return SequencedEvent(sequence: UInt64(index), event: .tracking(hit))
        }
        #expect(machine.oldestOwedTime() == nil, "nothing read, nothing owed")
        #expect(Self.step(&machine, log: log, limit: 6) == ["read 1", "send 1", "send 3", "send 4", "await"])
        #expect(machine.oldestOwedTime()?.nanosecondsSinceEpoch == 101_000_000_000)
        machine.completed(.done(3))
        machine.completed(.done(4))
        _ = Self.step(&machine, log: log, limit: 6)
        #expect(machine.oldestOwedTime()?.nanosecondsSinceEpoch == 101_000_000_000, "event 1 still holds the position")
        machine.completed(.done(1))
        _ = Self.step(&machine, log: log, limit: 6)
        #expect(machine.progress.contiguous == 5)
        #expect(machine.oldestOwedTime()?.nanosecondsSinceEpoch == 105_000_000_000, "past the passed-over registration, to event 5")
        machine.completed(.done(5))
        _ = Self.step(&machine, log: log, limit: 6)
        #expect(machine.oldestOwedTime() == nil)
    }

    @Test("an event backing off holds back neither the events behind it nor their sends; the cursor waits for it")
    func perEventRetries() {
        var machine = UploadLaneStateMachine(settings: Self.settings(concurrency: 2), start: 1)
        let log = Self.hits(1...5)
        #expect(Self.step(&machine, log: log, limit: 6) == ["read 1", "send 1", "send 2", "await"])
        // Event 1 is backing off: it stays in flight while 2…5 go and are done.
        machine.completed(.done(2))
        #expect(Self.step(&machine, log: log, limit: 6) == ["send 3", "await"])
        machine.completed(.done(3))
        #expect(Self.step(&machine, log: log, limit: 6) == ["send 4", "await"])
        machine.completed(.done(4))
        #expect(Self.step(&machine, log: log, limit: 6) == ["send 5", "await"])
        machine.completed(.done(5))
        #expect(Self.step(&machine, log: log, limit: 6) == ["read 6", "await"])
        #expect(machine.progress.contiguous == 1, "the cursor may not pass event 1")
        machine.completed(.done(1))
        #expect(Self.step(&machine, log: log, limit: 6) == ["read 6", "save 6", "await events 6"])
        #expect(machine.progress.durableCursor == 6)
    }

    @Test("registrations of one device token go one at a time, in log order; other events overtake them")
    func tokenOrdering() {
        var machine = UploadLaneStateMachine(settings: Self.settings(concurrency: 4, kind: .marketing), start: 1)
        let log = [
            SequencedEvent(sequence: 1, event: registration(token: "t1", userKey: "first")),
            SequencedEvent(sequence: 2, event: registration(token: "t1", userKey: "second")),
            SequencedEvent(sequence: 3, event: registration(token: "t2")),
            SequencedEvent(sequence: 4, event: registration(token: "t1", userKey: "third")),
        ]
        #expect(Self.step(&machine, log: log, limit: 5) == ["read 1", "send 1", "send 3", "read 5", "await"])
        machine.completed(.done(3))
        #expect(Self.step(&machine, log: log, limit: 5) == ["read 5", "await"])
        machine.completed(.done(1))
        #expect(Self.step(&machine, log: log, limit: 5) == ["send 2", "read 5", "save 2", "await"])
        machine.completed(.done(2))
        // Saved less than 200 ms ago, with a send under way: the next save waits.
        #expect(Self.step(&machine, log: log, limit: 5) == ["send 4", "read 5", "await"])
        machine.completed(.done(4))
        #expect(Self.step(&machine, log: log, limit: 5) == ["read 5", "save 5", "await events 5"])
    }

    @Test("the lane never reads further past its saved cursor than the duplicate bound")
    func duplicateBound() {
        var machine = UploadLaneStateMachine(settings: Self.settings(concurrency: 100, unsynced: 4), start: 1)
        let log = Self.hits(1...10)
        #expect(Self.step(&machine, log: log, limit: 11) == ["read 1", "send 1", "send 2", "send 3", "send 4", "await"])
        #expect(machine.progress.next == 5)
        for sequence: UInt64 in 1...4 { machine.completed(.done(sequence)) }
        // Done, but not saved: the bound still counts from the saved cursor, so save first.
        #expect(Self.step(&machine, log: log, limit: 11) == ["save 5", "send 5", "send 6", "send 7", "send 8", "await"])
    }

    @Test("a pipeline lane sends fresh hits in batches, one batch at a time; what a batch did not deliver goes one by one")
    func pipelineBatches() {
        var machine = UploadLaneStateMachine(settings: Self.settings(concurrency: 2, batchSize: 3), start: 1)
        let log = Self.hits(1...7)
        #expect(Self.step(&machine, log: log, limit: 8) == ["read 1", "batch 1,2,3", "await"])
        machine.completed(.batch(done: [1, 3], retry: [Self.hits(2...2)[0]], abandoned: false))
        #expect(Self.step(&machine, log: log, limit: 8) == ["batch 4,5,6", "send 2", "save 2", "await"])
        machine.completed(.done(2))
        machine.completed(.batch(done: [4, 5, 6], retry: [], abandoned: false))
        // The last hit does not fill a batch: it goes as a partial one once nothing else is in flight.
        #expect(Self.step(&machine, log: log, limit: 8) == ["read 8", "batch 7", "await"])
        #expect(Self.step(&machine, log: log, limit: 8, now: Self.t0 + .milliseconds(300)) == ["save 7", "await"], "saved again 200 ms later")
        machine.completed(.batch(done: [7], retry: [], abandoned: false))
        #expect(Self.step(&machine, log: log, limit: 8) == ["read 8", "save 8", "await events 8"])
    }

    @Test("events of the other lane and outside a replay's time range are passed over, and the cursor moves past them")
    func passedOver() {
        // The time range of `hit`'s events.
        let times = recentEventTime.nanosecondsSinceEpoch..<(recentEventTime.nanosecondsSinceEpoch + 1)
        var machine = UploadLaneStateMachine(settings: Self.settings(kind: .tracking, times: times), start: 1)
        var late = TrackingEvent(action: .open, messageId: MessageID(decimal: 9), deliveryId: "d", time: EventTime(nanosecondsSinceEpoch: 0))
        late.time = EventTime(nanosecondsSinceEpoch: times.upperBound)
        let log = [
            SequencedEvent(sequence: 1, event: registration(token: "t")), SequencedEvent(sequence: 2, event: hit(2)),
            SequencedEvent(sequence: 3, event: .tracking(late)),
        ]
        #expect(Self.step(&machine, log: log, limit: 4) == ["read 1", "send 2", "read 4", "save 2", "await"])
        #expect(machine.passedOver == 2)
        machine.completed(.done(2))
        #expect(Self.step(&machine, log: log, limit: 4) == ["read 4", "save 4", "await events 4"])
    }

    @Test("a replay saves nothing and finishes at its end, or at the end of the log when it has none")
    func replayEnds() {
        var bounded = UploadLaneStateMachine(settings: Self.settings(savesCursor: false, end: 3), start: 1)
        let log = Self.hits(1...5)
        #expect(Self.step(&bounded, log: log, limit: 3) == ["read 1", "send 1", "send 2", "read 3", "await"])
        bounded.completed(.done(1))
        bounded.completed(.done(2))
        #expect(Self.step(&bounded, log: log, limit: 3) == ["read 3", "finish"])
        #expect(bounded.cursorToSave == nil)

        var open = UploadLaneStateMachine(settings: Self.settings(savesCursor: false, end: nil), start: 4)
        #expect(Self.step(&open, log: log, limit: .max) == ["read 4", "send 4", "send 5", "read 6", "await"])
        open.completed(.done(4))
        open.completed(.done(5))
        #expect(Self.step(&open, log: log, limit: .max) == ["finish"])
    }

    @Test("an abandoned send stops the lane: nothing new starts, and it finishes once the sends under way end, its cursor short of them")
    func abandonedStops() {
        var machine = UploadLaneStateMachine(settings: Self.settings(concurrency: 2), start: 1)
        let log = Self.hits(1...5)
        #expect(Self.step(&machine, log: log, limit: 6) == ["read 1", "send 1", "send 2", "await"])
        machine.completed(.done(1))
        machine.completed(.abandoned(2))
        #expect(Self.step(&machine, log: log, limit: 6) == ["save 2", "finish"])
        #expect(machine.cursorToSave == nil)
        #expect(machine.progress.contiguous == 2)
    }

    @Test("a failed read is tried again a second later, not in a loop, even when sends end meanwhile")
    func readFailure() {
        var machine = UploadLaneStateMachine(settings: Self.settings(concurrency: 2), start: 1)
        #expect(Self.step(&machine, log: Self.hits(1...3), limit: 4) == ["read 1", "send 1", "send 2", "await"])
        machine.completed(.done(1))
        #expect(Self.step(&machine, log: Self.hits(1...3), limit: 4) == ["send 3", "save 2", "await"])
        machine.completed(.done(2))
        #expect(Self.describe(machine.nextAction(now: Self.t0)) == "read 4")
        machine.readFailed(now: Self.t0)
        #expect(Self.describe(machine.nextAction(now: Self.t0)) == "await")
        // The last send ends half a second later: the lane saves, then sleeps out the second.
        machine.completed(.done(3))
        #expect(Self.step(&machine, log: [], limit: 4, now: Self.t0 + .milliseconds(500)) == ["save 4", "sleep"])
        let action = machine.nextAction(now: Self.t0 + .milliseconds(600))
        guard case .sleep(let until) = action else {
            Issue.record("expected a sleep until the second is over, got \(Self.describe(action))")
            return
        }
        #expect(until == Self.t0 + .seconds(1))
        machine.resumed()
        #expect(Self.step(&machine, log: [], limit: 4, now: Self.t0 + .seconds(1)) == ["read 4", "await events 4"])
    }
}

@Suite("Per-event retry schedule", .tier(.fast))
struct EventRetryStateMachineTests {
    static func policy(attempts: Int = 3, age: Duration = .seconds(3600)) -> EventRetryStateMachine {
        EventRetryStateMachine(
            configuration: UploadConfiguration(
                backoff: Backoff(base: .milliseconds(100), cap: .seconds(5)), maximumAttempts: attempts, maximumEventAge: age))
    }

    @Test("failures while the host answers others count: the event is given up after the maximum, with the host's answer")
    func countedFailures() {
        var retry = Self.policy(attempts: 3)
        var random = SeededGenerator(seed: 7)
        let failure = DeliveryOutcome.retryable(reason: "HTTP 500", retryAfter: nil, status: 500, body: "boom")
        for attempt in 1...2 {
            guard case .retry(let delay) = retry.answer(failure, breakerOpened: false, age: 0, using: &random) else {
                Issue.record("attempt \(attempt) should be retried")
                return
            }
            #expect(delay <= Backoff(base: .milliseconds(100), cap: .seconds(5)).ceiling(attempt: attempt))
        }
        let decision = retry.answer(failure, breakerOpened: false, age: 0, using: &random)
        guard case .giveUp(let status, let body, let reason, let delay) = decision else {
            Issue.record("the third counted failure gives the event up, got \(decision)")
            return
        }
        #expect(status == 500)
        #expect(body == "boom")
        #expect(reason == "3 failed attempts (the maximum) while the host answered others; last: HTTP 500")
        // Should the dead-letter store fail, the event waits its backoff before it is sent again.
        #expect(delay <= Backoff(base: .milliseconds(100), cap: .seconds(5)).ceiling(attempt: 3))
        #expect(retry.attempts == 3)
        #expect(retry.countedFailures == 3)
    }

    @Test("an outage does not use up an event's attempts; only its age ends them")
    func outageDoesNotCount() {
        var retry = Self.policy(attempts: 2, age: .seconds(60))
        var random = SeededGenerator(seed: 1)
        let failure = DeliveryOutcome.retryable(reason: "connection refused", retryAfter: .seconds(3), status: nil, body: "")
        for _ in 1...50 {
            #expect(retry.answer(failure, breakerOpened: true, age: 1_000_000_000, using: &random) == .retry(after: .seconds(3)))
        }
        #expect(retry.countedFailures == 0)
        let decision = retry.answer(failure, breakerOpened: true, age: 61_000_000_000, using: &random)
        guard case .giveUp(let status, let body, let reason, let delay) = decision else {
            Issue.record("an event past the maximum age is given up, got \(decision)")
            return
        }
        #expect(status == 0)
        #expect(body == "connection refused", "with no HTTP answer, the reason stands for the body")
        #expect(reason == "older than the maximum event age (60.0 seconds) after 51 attempts; last: connection refused")
        #expect(delay == .seconds(3))
    }

    @Test("a rejection or an unfollowed redirection is final; a hit a batch did not send is sent again at once, uncounted")
    func finalAnswers() {
        var retry = Self.policy()
        var random = SeededGenerator(seed: 2)
        #expect(
            retry.answer(.rejected(status: 400, body: "bad"), breakerOpened: false, age: 0, using: &random)
                == .giveUp(status: 400, body: "bad", reason: "rejected by the host (HTTP 400)", retryAfterStoreFailure: .seconds(1)))
        #expect(
            retry.answer(.redirected(status: 302, location: "/elsewhere"), breakerOpened: false, age: 0, using: &random)
                == .giveUp(
                    status: 302, body: "redirected to /elsewhere", reason: "redirected, not followed (HTTP 302)", retryAfterStoreFailure: .seconds(1))
        )
        let before = retry.attempts
        #expect(retry.answer(.notSent, breakerOpened: false, age: 0, using: &random) == .retry(after: .zero))
        #expect(retry.attempts == before)
        #expect(retry.answer(.delivered, breakerOpened: false, age: 0, using: &random) == .delivered)
    }
}

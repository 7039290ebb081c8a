import TestTiers
import Testing

@testable import RelayLog

/// The writer's decisions, without files or tasks: what the log does with appends, commits,
/// removals and `close()` is decided here, and these tests drive the machine as the log would.
@Suite("The log writer's state machine", .tier(.fast))
struct LogWriterStateMachineTests {
    @Test("appends arriving while a commit is away wait for the next one, all together; only the first after a commit wakes the flush loop")
    func appendsGroupBehindACommit() {
        var machine = LogWriterStateMachine(maximumPendingEvents: 100)
        let answer1 = machine.append(events: 3)
        #expect(answer1 == .enqueue(wakeFlushLoop: true))
        let answer2 = machine.append(events: 4)
        #expect(answer2 == .enqueue(wakeFlushLoop: false))
        let answer3 = machine.commitDeparts()
        #expect(answer3)
        #expect(machine.writer == .committing && machine.pendingAppends == 0 && machine.pendingEvents == 0)

        // While the writer is away, appends queue and a second commit cannot leave.
        let answer4 = machine.append(events: 5)
        #expect(answer4 == .enqueue(wakeFlushLoop: true))
        let answer5 = machine.append(events: 6)
        #expect(answer5 == .enqueue(wakeFlushLoop: false))
        let answer6 = machine.commitDeparts()
        #expect(!answer6)
        #expect(machine.pendingAppends == 2 && machine.pendingEvents == 11)

        // Back home with appends queued: the loop (still running) takes them in one commit.
        let back = machine.commitReturned()
        #expect(back == .init(wakeFlushLoop: true, resumeIdleWaiters: false))
        let answer7 = machine.commitDeparts()
        #expect(answer7)
        #expect(machine.pendingEvents == 0)
        let answer8 = machine.commitReturned()
        #expect(answer8 == .init())
        #expect(machine.isIdle)
        let answer9 = machine.commitDeparts()
        #expect(!answer9, "nothing queued: no empty commit")
    }

    @Test("an append that would put more than the limit in the queue is refused with the exact figures; one that fits is taken")
    func backPressure() {
        var machine = LogWriterStateMachine(maximumPendingEvents: 10)
        let answer10 = machine.append(events: 7)
        #expect(answer10 == .enqueue(wakeFlushLoop: true))
        let answer11 = machine.append(events: 4)
        #expect(answer11 == .refuseOverloaded(pendingEvents: 7, limit: 10))
        let answer12 = machine.append(events: 3)
        #expect(answer12 == .enqueue(wakeFlushLoop: false))
        let answer13 = machine.append(events: 1)
        #expect(answer13 == .refuseOverloaded(pendingEvents: 10, limit: 10))
        let answer14 = machine.commitDeparts()
        #expect(answer14)
        let answer15 = machine.append(events: 10)
        #expect(answer15 == .enqueue(wakeFlushLoop: true), "a commit leaving empties the queue")
    }

    @Test(
        "the writer is in one place: a removal never leaves while a commit is away, nor a commit while a removal is; a removal back home with appends queued wakes the loop"
    )
    func writerIsInOnePlace() {
        var machine = LogWriterStateMachine(maximumPendingEvents: 100)
        let answer16 = machine.retentionPassBegins()
        #expect(answer16)
        let answer17 = machine.retentionPassBegins()
        #expect(!answer17, "one retention pass at a time")
        _ = machine.append(events: 1)
        let answer18 = machine.commitDeparts()
        #expect(answer18)
        let answer19 = machine.removalDeparts()
        #expect(!answer19, "the commit has the writer: its deletions wait for the next commit")
        _ = machine.commitReturned()
        let answer20 = machine.removalDeparts()
        #expect(answer20)
        #expect(machine.writer == .removing)

        let answer21 = machine.append(events: 2)
        #expect(answer21 == .enqueue(wakeFlushLoop: true))
        let answer22 = machine.commitDeparts()
        #expect(!answer22, "the removal has the writer")
        let answer23 = machine.removalReturned()
        #expect(answer23 == .init(wakeFlushLoop: true, resumeIdleWaiters: false))
        let answer24 = machine.retentionPassEnded()
        #expect(answer24 == .init(wakeFlushLoop: true, resumeIdleWaiters: false))
        let answer25 = machine.commitDeparts()
        #expect(answer25)
        let answer26 = machine.retentionPassBegins()
        #expect(answer26, "the first pass ended")
    }

    @Test(
        "close: appends refused from its start; it waits until the writer is home, nothing is queued and no pass runs; then the log shuts and nothing leaves"
    )
    func closing() {
        var machine = LogWriterStateMachine(maximumPendingEvents: 100)
        _ = machine.append(events: 1)
        let answer27 = machine.commitDeparts()
        #expect(answer27)
        _ = machine.append(events: 2)
        let answer28 = machine.retentionPassBegins()
        #expect(answer28)

        let answer29 = machine.closeBegins()
        #expect(answer29)
        let answer30 = machine.closeBegins()
        #expect(!answer30, "a second close() does not close again")
        let answer31 = machine.append(events: 1)
        #expect(answer31 == .refuseClosed)
        let answer32 = machine.idleWaitBegins()
        #expect(answer32, "a commit is away")
        let answer33 = machine.shut()
        #expect(!answer33)

        // The queued append is still committed while closing; the idle waiter is resumed once,
        // when the last of commit and pass is over.
        let answer34 = machine.commitReturned()
        #expect(answer34 == .init(wakeFlushLoop: true, resumeIdleWaiters: false))
        let answer35 = machine.commitDeparts()
        #expect(answer35)
        let answer36 = machine.commitReturned()
        #expect(answer36 == .init(wakeFlushLoop: false, resumeIdleWaiters: false), "the pass still runs")
        let answer37 = machine.retentionPassEnded()
        #expect(answer37 == .init(wakeFlushLoop: false, resumeIdleWaiters: true))
        let answer38 = machine.idleWaitBegins()
        #expect(!answer38)

        // A last pass while closing is allowed; once shut, nothing.
        let answer39 = machine.retentionPassBegins()
        #expect(answer39)
        let answer40 = machine.shut()
        #expect(!answer40, "not while a pass runs")
        _ = machine.retentionPassEnded()
        let answer41 = machine.shut()
        #expect(answer41)
        #expect(machine.lifecycle == .closed)
        let answer42 = machine.retentionPassBegins()
        #expect(!answer42)
        let answer43 = machine.removalDeparts()
        #expect(!answer43)
        let answer44 = machine.append(events: 1)
        #expect(answer44 == .refuseClosed)
        let answer45 = machine.commitDeparts()
        #expect(!answer45)
    }
}

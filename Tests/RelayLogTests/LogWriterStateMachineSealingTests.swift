import TestTiers
import Testing

@testable import RelayLog

/// Sealing in the writer's state machine, without files or tasks: a seal is done at once while
/// the writer is home, and otherwise by the transition that brings it home, once.
@Suite("The log writer's state machine: sealing", .tier(.fast))
struct LogWriterStateMachineSealingTests {
    @Test("a seal with the writer home is done at once and leaves the state as it was")
    func sealAtHome() {
        var machine = LogWriterStateMachine(maximumPendingEvents: 100)
        _ = machine.append(events: 2)
        let before = machine.state
        let seal = machine.sealRequested()
        #expect(seal == .sealNow)
        #expect(machine.state == before)
        let departed = machine.commitDeparts()
        #expect(departed)
        let back = machine.commitReturned()
        #expect(back == .init(), "nothing was awaited: no seal when the commit comes home")
    }

    @Test("a seal asked for while a commit is away waits, and the commit's return seals once; the next commit's return does not")
    func sealWhileCommitting() {
        var machine = LogWriterStateMachine(maximumPendingEvents: 100)
        _ = machine.append(events: 1)
        let departed = machine.commitDeparts()
        #expect(departed)
        let first = machine.sealRequested()
        #expect(first == .waitForWriter)
        let second = machine.sealRequested()
        #expect(second == .waitForWriter, "a second caller waits for the same return")
        #expect(machine.state == .open(.init(place: .committing(sealAwaited: true))))
        _ = machine.append(events: 3)
        let back = machine.commitReturned()
        #expect(back == .init(wakeFlushLoop: true, resumeIdleWaiters: false, sealActiveSegment: true))
        let departedAgain = machine.commitDeparts()
        #expect(departedAgain)
        let backAgain = machine.commitReturned()
        #expect(backAgain == .init(), "the seal was done: the next return does not seal again")
    }

    @Test("a seal asked for while a removal is away is done as the removal comes home, even while the log is closing")
    func sealWhileRemovingAndClosing() {
        var machine = LogWriterStateMachine(maximumPendingEvents: 100)
        let began = machine.retentionPassBegins()
        let departed = machine.removalDeparts()
        let closing = machine.closeBegins()
        #expect(began && departed && closing)
        let seal = machine.sealRequested()
        #expect(seal == .waitForWriter)
        let back = machine.removalReturned()
        #expect(back == .init(sealActiveSegment: true))
        _ = machine.retentionPassEnded()
        let atHome = machine.sealRequested()
        #expect(atHome == .sealNow, "closing, home: sealed at once")
    }

    @Test("a shut log holds no writer, queue or pass: a seal is answered at once")
    func sealWhenShut() {
        var machine = LogWriterStateMachine(maximumPendingEvents: 100)
        let closing = machine.closeBegins()
        let shut = machine.shut()
        #expect(closing && shut)
        #expect(machine.state == .closed)
        let seal = machine.sealRequested()
        #expect(seal == .alreadySealed)
        #expect(machine.state == .closed)
    }
}

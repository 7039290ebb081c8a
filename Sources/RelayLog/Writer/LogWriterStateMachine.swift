/// The decisions of the log's writer, without files or tasks: whether an append is taken, when a
/// group commit may leave for the store, when a segment removal may, when the active segment is
/// sealed, when the flush loop must be woken, when `close()` may go on, and when the log is shut.
///
/// Written as swift-nio writes its state machines: one enum of states (``State``), each holding
/// only what exists in it, and transitions that return what the driver must do. ``WriteAheadLog``
/// is the driver: it tells the machine what happened and does what the answers say (the frames
/// go to the ``FrameStore``, which the machine never sees). The states keep the writer's promises:
/// - the writer is in one place at a time: home, away on a group commit, or away on a removal;
/// - appends that arrive while it is away wait for the next group commit, all of them together;
/// - a seal asked for while it is away is done as it comes home, before anything leaves again
///   (only an away writer can have a seal awaited: ``Place``);
/// - one retention pass at a time, and none once the log is shut;
/// - `close()` goes on only when the writer is home, nothing is pending and no pass is under way;
///   appends are refused from its start, and nothing leaves once the log is shut (a shut log has
///   no writer, no queue and no pass: ``State/closed`` holds nothing).
struct LogWriterStateMachine: Sendable {
    /// Where the writer is.
    enum WriterPlace: Sendable, Hashable {
        /// Home: its figures can be read, and a commit or a removal may take it.
        case home
        /// Away on the store's thread, writing and syncing a group commit.
        case committing
        /// Away on the store's thread, deleting passed segments.
        case removing
    }

    /// Where the log is in its life.
    enum Lifecycle: Sendable, Hashable {
        /// Taking appends.
        case open
        /// `close()` has begun: appends are refused; the last commits and a last retention pass finish.
        case closing
        /// Shut: the files and the lock are closed.
        case closed
    }

    /// What becomes of an append.
    enum AppendDecision: Sendable, Hashable {
        /// Queue it for the next group commit; wake the flush loop when `wakeFlushLoop` (it may be
        /// idle: nothing was pending before this append).
        case enqueue(wakeFlushLoop: Bool)
        /// Refuse it: the log is closing or closed.
        case refuseClosed
        /// Refuse it: taking it would put more than `limit` events in the queue.
        case refuseOverloaded(pendingEvents: Int, limit: Int)
    }

    /// What becomes of a request to seal the active segment.
    enum SealDecision: Sendable, Hashable {
        /// The writer is home: seal now and answer with the durable end.
        case sealNow
        /// The writer is away: wait; a transition bringing it home says ``Effects/sealActiveSegment``.
        case waitForWriter
        /// The log is shut: nothing will be written again; answer with the durable end.
        case alreadySealed
    }

    /// What the driver must do after a transition, besides what its return says.
    struct Effects: Sendable, Hashable {
        /// Wake the flush loop: appends wait and the writer is home again.
        var wakeFlushLoop = false
        /// Resume the callers waiting for the writer to be idle (``close()``).
        var resumeIdleWaiters = false
        /// Seal the active segment and answer the callers of a seal waiting for the writer (it is
        /// home, and the driver's durable end counts what it brought back).
        var sealActiveSegment = false
    }

    /// Where the writer is, and whether a seal waits for it to come home (only an away writer
    /// can be awaited: a seal asked for at home is done at once).
    enum Place: Sendable, Hashable {
        /// Home.
        case home
        /// Away on a group commit.
        case committing(sealAwaited: Bool)
        /// Away on a removal.
        case removing(sealAwaited: Bool)
    }

    /// What exists while the log has a writer: where it is, its queue, the retention pass.
    struct Running: Sendable, Hashable {
        var place: Place = .home
        /// Events queued for the next group commit.
        var pendingEvents = 0
        /// Appends queued for the next group commit.
        var pendingAppends = 0
        /// Whether a retention pass is under way (it may be copying to the archive while the writer commits).
        var retentionPassUnderWay = false
        /// Whether someone waits for the writer to be idle.
        var idleAwaited = false

        /// Home, nothing queued and no retention pass under way.
        var isIdle: Bool { place == .home && pendingAppends == 0 && !retentionPassUnderWay }
    }

    /// The log's states.
    enum State: Sendable, Hashable {
        /// Taking appends.
        case open(Running)
        /// `close()` has begun: appends refused; what is queued and a pass under way finish.
        case closing(Running)
        /// Shut: no writer, nothing queued, nothing under way.
        case closed
    }

    /// The state now.
    private(set) var state: State = .open(Running())
    /// Events the queue holds at most; appends beyond are refused (back-pressure).
    let maximumPendingEvents: Int

    /// A writer at home in an open log.
    init(maximumPendingEvents: Int) {
        self.maximumPendingEvents = maximumPendingEvents
    }

    // MARK: What the state says

    /// Where the writer is (home once the log is shut: it is nowhere else).
    var writer: WriterPlace {
        switch running?.place {
        case .home, nil: .home
        case .committing: .committing
        case .removing: .removing
        }
    }

    /// Where the log is in its life.
    var lifecycle: Lifecycle {
        switch state {
        case .open: .open
        case .closing: .closing
        case .closed: .closed
        }
    }

    /// Events queued for the next group commit.
    var pendingEvents: Int { running?.pendingEvents ?? 0 }
    /// Appends queued for the next group commit.
    var pendingAppends: Int { running?.pendingAppends ?? 0 }
    /// Whether a retention pass is under way.
    var retentionPassUnderWay: Bool { running?.retentionPassUnderWay ?? false }
    /// Home, nothing queued and no retention pass under way: nothing will move until something new arrives.
    var isIdle: Bool { running?.isIdle ?? true }

    private var running: Running? {
        switch state {
        case .open(let running), .closing(let running): running
        case .closed: nil
        }
    }

    /// Runs `change` on the writer's state while the log has one (open or closing, which it
    /// keeps); answers `otherwise` once the log is shut. The transitions are written with it.
    mutating func withRunning<Answer>(otherwise: Answer, _ change: (inout Running) -> Answer) -> Answer {
        switch state {
        case .open(var running):
            let answer = change(&running)
            state = .open(running)
            return answer
        case .closing(var running):
            let answer = change(&running)
            state = .closing(running)
            return answer
        case .closed:
            return otherwise
        }
    }

    // MARK: Appends and group commits

    /// An append of `events` (at least one) arrives.
    mutating func append(events: Int) -> AppendDecision {
        guard case .open(var running) = state else { return .refuseClosed }
        guard running.pendingEvents + events <= maximumPendingEvents else {
            return .refuseOverloaded(pendingEvents: running.pendingEvents, limit: maximumPendingEvents)
        }
        let wasEmpty = running.pendingAppends == 0
        running.pendingAppends += 1
        running.pendingEvents += events
        state = .open(running)
        return .enqueue(wakeFlushLoop: wasEmpty)
    }

    /// The flush loop asks whether a group commit may leave now. When `true`, the driver takes
    /// every queued append into one commit and sends the writer away with it.
    mutating func commitDeparts() -> Bool {
        withRunning(otherwise: false) { running in
            guard running.place == .home, running.pendingAppends > 0 else { return false }
            running.place = .committing(sealAwaited: false)
            running.pendingAppends = 0
            running.pendingEvents = 0
            return true
        }
    }

    /// The group commit is back (succeeded or failed): the writer is home.
    mutating func commitReturned() -> Effects {
        withRunning(otherwise: Effects()) { running in
            guard case .committing(let sealAwaited) = running.place else {
                assertionFailure("a commit returned while the writer was \(running.place)")
                return Effects()
            }
            running.place = .home
            var effects = Self.settle(&running)
            effects.sealActiveSegment = sealAwaited
            return effects
        }
    }

    // MARK: Retention

    /// A retention pass wants to begin; `false` when one is under way or the log is shut.
    mutating func retentionPassBegins() -> Bool {
        withRunning(otherwise: false) { running in
            guard !running.retentionPassUnderWay else { return false }
            running.retentionPassUnderWay = true
            return true
        }
    }

    /// The pass has segments to delete and asks for the writer; `true` when it was home and is now
    /// away removing. When `false`, the deletions wait for the next group commit.
    mutating func removalDeparts() -> Bool {
        withRunning(otherwise: false) { running in
            guard running.place == .home else { return false }
            running.place = .removing(sealAwaited: false)
            return true
        }
    }

    /// The removal is back: the writer is home, and appends that queued meanwhile must be committed.
    mutating func removalReturned() -> Effects {
        withRunning(otherwise: Effects()) { running in
            guard case .removing(let sealAwaited) = running.place else {
                assertionFailure("a removal returned while the writer was \(running.place)")
                return Effects()
            }
            running.place = .home
            var effects = Self.settle(&running)
            effects.sealActiveSegment = sealAwaited
            return effects
        }
    }

    /// The retention pass is over.
    mutating func retentionPassEnded() -> Effects {
        withRunning(otherwise: Effects()) { running in
            running.retentionPassUnderWay = false
            return Self.settle(&running)
        }
    }

    // MARK: Sealing

    /// A caller asks for the active segment to be sealed (``WriteAheadLog/sealActiveSegment()``).
    /// While the writer is away the seal is recorded, and the transition that brings it home says
    /// ``Effects/sealActiveSegment``: a seal never waits for the appends queued behind it.
    mutating func sealRequested() -> SealDecision {
        withRunning(otherwise: .alreadySealed) { running in
            switch running.place {
            case .home:
                return .sealNow
            case .committing:
                running.place = .committing(sealAwaited: true)
                return .waitForWriter
            case .removing:
                running.place = .removing(sealAwaited: true)
                return .waitForWriter
            }
        }
    }

    // MARK: Closing

    /// `close()` begins; `false` when it began before. Appends are refused from here on.
    mutating func closeBegins() -> Bool {
        guard case .open(let running) = state else { return false }
        state = .closing(running)
        return true
    }

    /// `close()` waits for the writer to be idle; `false` when it already is (no wait).
    mutating func idleWaitBegins() -> Bool {
        withRunning(otherwise: false) { running in
            guard !running.isIdle else { return false }
            running.idleAwaited = true
            return true
        }
    }

    /// `close()` shuts the log once the writer is idle: nothing leaves from here on. `false` (and
    /// nothing changes) while the writer is not idle (or the log is open): `close()` waits again.
    mutating func shut() -> Bool {
        switch state {
        case .closing(let running) where running.isIdle:
            state = .closed
            return true
        case .closed:
            return true
        case .open, .closing:
            return false
        }
    }

    /// After a transition: appends waiting while the writer is home wake the flush loop; an idle
    /// writer resumes whoever waits for it.
    private static func settle(_ running: inout Running) -> Effects {
        var effects = Effects()
        if running.place == .home, running.pendingAppends > 0 { effects.wakeFlushLoop = true }
        if running.idleAwaited, running.isIdle {
            running.idleAwaited = false
            effects.resumeIdleWaiters = true
        }
        return effects
    }
}

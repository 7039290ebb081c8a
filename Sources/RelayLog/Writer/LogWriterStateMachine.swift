/// The decisions of the log's writer, without files or tasks: whether an append is taken, when a
/// group commit may leave for the I/O thread, when a segment removal may, when the flush loop must
/// be woken, when `close()` may go on, and when the log is shut.
///
/// ``WriteAheadLog`` is the driver: it tells the machine what happened and does what the answers
/// say (the files move with the `SegmentWriter`, which the machine never sees). The machine keeps
/// the writer's promises:
/// - the writer is in one place at a time: home, away on a group commit, or away on a removal;
/// - appends that arrive while it is away wait for the next group commit, all of them together;
/// - one retention pass at a time, and none once the log is shut;
/// - `close()` goes on only when the writer is home, nothing is pending and no pass is under way;
///   appends are refused from its start, and nothing leaves once the log is shut.
struct LogWriterStateMachine: Sendable {
    /// Where the writer is.
    enum WriterPlace: Sendable, Hashable {
        /// Home: its figures can be read, and a commit or a removal may take it.
        case home
        /// Away on the I/O thread, writing and syncing a group commit.
        case committing
        /// Away on the I/O thread, deleting passed segments.
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

    /// What the driver must do after a transition, besides what its return says.
    struct Effects: Sendable, Hashable {
        /// Wake the flush loop: appends wait and the writer is home again.
        var wakeFlushLoop = false
        /// Resume the callers waiting for the writer to be idle (``close()``).
        var resumeIdleWaiters = false
    }

    /// Where the writer is.
    private(set) var writer: WriterPlace = .home
    /// Where the log is in its life.
    private(set) var lifecycle: Lifecycle = .open
    /// Events queued for the next group commit.
    private(set) var pendingEvents = 0
    /// Appends queued for the next group commit.
    private(set) var pendingAppends = 0
    /// Whether a retention pass is under way (it may be copying to the archive while the writer commits).
    private(set) var retentionPassUnderWay = false
    /// Whether someone waits for the writer to be idle.
    private var idleAwaited = false
    /// Events the queue holds at most; appends beyond are refused (back-pressure).
    let maximumPendingEvents: Int

    /// A writer at home in an open log.
    init(maximumPendingEvents: Int) {
        self.maximumPendingEvents = maximumPendingEvents
    }

    /// Home, nothing queued and no retention pass under way: nothing will move until something new arrives.
    var isIdle: Bool { writer == .home && pendingAppends == 0 && !retentionPassUnderWay }

    // MARK: Appends and group commits

    /// An append of `events` (at least one) arrives.
    mutating func append(events: Int) -> AppendDecision {
        guard lifecycle == .open else { return .refuseClosed }
        guard pendingEvents + events <= maximumPendingEvents else {
            return .refuseOverloaded(pendingEvents: pendingEvents, limit: maximumPendingEvents)
        }
        let wasEmpty = pendingAppends == 0
        pendingAppends += 1
        pendingEvents += events
        return .enqueue(wakeFlushLoop: wasEmpty)
    }

    /// The flush loop asks whether a group commit may leave now. When `true`, the driver takes
    /// every queued append into one commit and sends the writer away with it.
    mutating func commitDeparts() -> Bool {
        guard writer == .home, pendingAppends > 0, lifecycle != .closed else { return false }
        writer = .committing
        pendingAppends = 0
        pendingEvents = 0
        return true
    }

    /// The group commit is back (succeeded or failed): the writer is home.
    mutating func commitReturned() -> Effects {
        assert(writer == .committing, "a commit returned while the writer was \(writer)")
        writer = .home
        return settle()
    }

    // MARK: Retention

    /// A retention pass wants to begin; `false` when one is under way or the log is shut.
    mutating func retentionPassBegins() -> Bool {
        guard !retentionPassUnderWay, lifecycle != .closed else { return false }
        retentionPassUnderWay = true
        return true
    }

    /// The pass has segments to delete and asks for the writer; `true` when it was home and is now
    /// away removing. When `false`, the deletions wait for the next group commit.
    mutating func removalDeparts() -> Bool {
        guard writer == .home, lifecycle != .closed else { return false }
        writer = .removing
        return true
    }

    /// The removal is back: the writer is home, and appends that queued meanwhile must be committed.
    mutating func removalReturned() -> Effects {
        assert(writer == .removing, "a removal returned while the writer was \(writer)")
        writer = .home
        return settle()
    }

    /// The retention pass is over.
    mutating func retentionPassEnded() -> Effects {
        retentionPassUnderWay = false
        return settle()
    }

    // MARK: Closing

    /// `close()` begins; `false` when it began before. Appends are refused from here on.
    mutating func closeBegins() -> Bool {
        guard lifecycle == .open else { return false }
        lifecycle = .closing
        return true
    }

    /// `close()` waits for the writer to be idle; `false` when it already is (no wait).
    mutating func idleWaitBegins() -> Bool {
        guard !isIdle else { return false }
        idleAwaited = true
        return true
    }

    /// `close()` shuts the log once the writer is idle: nothing leaves from here on. `false` (and
    /// nothing changes) while the writer is not idle: `close()` waits again.
    mutating func shut() -> Bool {
        guard isIdle else { return false }
        lifecycle = .closed
        return true
    }

    /// After a transition: appends waiting while the writer is home wake the flush loop; an idle
    /// writer resumes whoever waits for it.
    private mutating func settle() -> Effects {
        var effects = Effects()
        if writer == .home, pendingAppends > 0 { effects.wakeFlushLoop = true }
        if idleAwaited, isIdle {
            idleAwaited = false
            effects.resumeIdleWaiters = true
        }
        return effects
    }
}

import NIOConcurrencyHelpers
import RelayCore

/// One append waiting for a group commit: its events and who to tell.
struct PendingAppend: Sendable {
    var events: [Event]
    /// Called once, with the events' sequence numbers or why they were not stored.
    var complete: @Sendable (Result<Range<UInt64>, LogError>) -> Void
}

/// The group commit's bookkeeping: the appends queued for the next commit, the sequence numbers
/// they get, and their answers. A pure value the ``WriteAheadLog`` drives: it admits appends
/// (``LogWriterStateMachine/append(events:)`` says whether), takes them all as one
/// ``FrameGroup`` when a commit leaves, and answers every one of them when the commit is back.
/// One group costs one store append (one fdatasync) whatever the number of appends in it, and
/// nothing here costs more than a pass over the group's appends.
struct GroupCommitter: Sendable {
    /// The appends queued for the next commit, in admission order.
    private var pending: [PendingAppend] = []
    /// The next event's sequence number: the store's durable end (every event below it is durable).
    private(set) var nextSequence: UInt64

    /// A committer whose first event will be `nextSequence`.
    init(nextSequence: UInt64) {
        self.nextSequence = nextSequence
    }

    /// Queues `append` for the next commit.
    mutating func enqueue(_ append: PendingAppend) {
        pending.append(append)
    }

    /// Takes every queued append as one group, its first event numbered ``nextSequence``.
    mutating func takeGroup(tallyingTenants: Bool) -> (group: FrameGroup, appends: [PendingAppend]) {
        let appends = pending
        pending = []
        return (FrameGroup(batches: appends.map(\.events), firstSequence: nextSequence, tallyingTenants: tallyingTenants), appends)
    }

    /// The group of `appends` is durable up to `durableEnd`: each append learns its sequence
    /// numbers (contiguous, in admission order) and ``nextSequence`` moves there.
    mutating func committed(_ appends: [PendingAppend], durableEnd: UInt64) {
        var start = nextSequence
        for append in appends {
            let end = start + UInt64(append.events.count)
            append.complete(.success(start..<end))
            start = end
        }
        assert(start == durableEnd, "the store's durable end \(durableEnd) is not the group's end \(start)")
        nextSequence = durableEnd
    }

    /// The store found events of a commit that failed durable after all (a database that
    /// committed it as the connection broke): they keep their numbers, unacknowledged, and the
    /// next group is numbered after them.
    mutating func skip(to durableEnd: UInt64) {
        nextSequence = max(nextSequence, durableEnd)
    }

    /// The group of `appends` failed: none of them is acknowledged.
    func failed(_ appends: [PendingAppend], with error: LogError) {
        for append in appends { append.complete(.failure(error)) }
    }
}

/// Appends handed in from outside the log's actor (``WriteAheadLog/append(_:completion:)``), in
/// arrival order, until the flush loop admits them; closed (`nil`) once the log is closing.
final class SubmittedAppends: Sendable {
    private let queue = NIOLockedValueBox<[PendingAppend]?>([])

    /// Queues `append`; `false` when the log is closing (the caller answers it).
    func submit(_ append: PendingAppend) -> Bool {
        queue.withLockedValue { queue -> Bool in
            guard queue != nil else { return false }
            queue?.append(append)
            return true
        }
    }

    /// Takes what was handed in since the last time.
    func take() -> [PendingAppend] {
        queue.withLockedValue { queue -> [PendingAppend] in
            guard let appends = queue, !appends.isEmpty else { return [] }
            queue = []
            return appends
        }
    }

    /// Takes what was handed in and refuses everything from now on.
    func close() -> [PendingAppend] {
        queue.withLockedValue { queue -> [PendingAppend] in
            defer { queue = nil }
            return queue ?? []
        }
    }
}

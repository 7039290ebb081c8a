import NIOConcurrencyHelpers
package import RelayCore
import Synchronization

/// The sequence numbers of registrations being erased: every reader of the log hands them out as
/// ``RelayCore/Event/erased(_:)`` entries, whatever the segment it reads still holds, so that no
/// consumer counts or sends a registration once its erasure began.
///
/// A running log keeps one (``WriteAheadLog/erasureMask``) that its readers share and an erasure
/// in the server adds to before it rewrites a segment: a reader that opened the segment before
/// the rewrite goes on reading its old bytes, and this mask covers them. A reader of its own
/// (``LogReader/init(walDirectory:archiveDirectory:fileSystem:from:keys:damageLogger:)``) loads
/// the plans of the erasures not finished yet (``ErasurePlan``) when it first reads: an erasure
/// cut short by a crash is masked until a restart finishes it.
///
/// Senders tell the mask what they put on the wire (``beginSending(_:)``, ``endSending(_:deliveredBy:)``),
/// so that an erasure can wait for a send of a registration it masks that began before it
/// (``insertAwaitingSends(_:)``): once it answers, nothing of that registration can still reach a
/// destination, and it knows which of those sends were delivered.
public final class ErasureMask: Sendable {
    private struct State {
        var masked: Set<UInt64> = []
        /// Registrations on the wire, with how many sends each (a marketing lane and a relay lane may
        /// send the same one at once).
        var inFlight: [UInt64: Int] = [:]
        /// Masked registrations whose send, begun before the mask, was delivered, by the sender's name.
        var deliveredWhileMasked: [String: Set<UInt64>] = [:]
        var waiters: [Waiter] = []
    }

    private struct Waiter {
        var pending: Set<UInt64>
        var continuation: CheckedContinuation<Void, Never>
    }

    private let state = NIOLockedValueBox(State())
    /// Kept apart so that the readers' check, once per batch, takes no lock while nothing is erased.
    private let count = Atomic<Int>(0)

    /// An empty mask.
    public init() {}

    /// A mask of `sequences`.
    public init(_ sequences: some Sequence<UInt64>) {
        insert(sequences)
    }

    /// The mask of the erasures whose plans are in `walDirectory` (none when it cannot be listed).
    /// It reads files: call it on a thread made for blocking calls.
    public static func pending(walDirectory: String, fileSystem: any FileSystem = PosixFileSystem()) -> ErasureMask {
        // One plan that cannot be read must not unmask the others.
        let plans = (try? ErasurePlan.pending(walDirectory: walDirectory, fileSystem: fileSystem, skippingUnreadable: true)) ?? []
        let mask = ErasureMask()
        mask.insert(plans: plans)
        return mask
    }

    /// Masks the registrations of `plans` (erasures not finished) from now on.
    public func insert(plans: [ErasurePlan]) {
        insert(plans.flatMap { $0.targets.map(\.sequence) })
    }

    /// Whether nothing is masked.
    public var isEmpty: Bool { count.load(ordering: .acquiring) == 0 }

    /// Whether `sequence` is masked.
    public func contains(_ sequence: UInt64) -> Bool {
        guard !isEmpty else { return false }
        return state.withLockedValue { $0.masked.contains(sequence) }
    }

    /// Masks `added` from now on.
    public func insert(_ added: some Sequence<UInt64>) {
        state.withLockedValue { state in
            state.masked.formUnion(added)
            count.store(state.masked.count, ordering: .releasing)
        }
    }

    /// Masks `added` from now on, then waits until no send of them that began before is on the
    /// wire, and returns those of them such a send delivered, by the sender's name (see
    /// ``endSending(_:deliveredBy:)``). A send ends within its request timeout. `whenWaiting` is
    /// told how many of them are on the wire when there are any, before the wait.
    public func insertAwaitingSends(_ added: [UInt64], whenWaiting: (Int) -> Void = { _ in }) async -> [String: Set<UInt64>] {
        let wanted = Set(added)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let pending = state.withLockedValue { state -> Int in
                state.masked.formUnion(wanted)
                count.store(state.masked.count, ordering: .releasing)
                let pending = wanted.filter { state.inFlight[$0] != nil }
                guard !pending.isEmpty else { return 0 }
                state.waiters.append(Waiter(pending: pending, continuation: continuation))
                return pending.count
            }
            if pending == 0 {
                continuation.resume()
            } else {
                whenWaiting(pending)
            }
        }
        return state.withLockedValue { state in
            var delivered: [String: Set<UInt64>] = [:]
            for (sender, sequences) in state.deliveredWhileMasked {
                let mine = sequences.intersection(wanted)
                guard !mine.isEmpty else { continue }
                delivered[sender] = mine
                state.deliveredWhileMasked[sender] = sequences.subtracting(mine)
            }
            return delivered
        }
    }

    /// Marks the registrations `sequences` as on the wire, but for those masked, which are
    /// returned and must not be sent. Every call is followed by ``endSending(_:deliveredBy:)`` with
    /// the others once their send ended.
    public func beginSending(_ sequences: [UInt64]) -> Set<UInt64> {
        state.withLockedValue { state in
            var masked: Set<UInt64> = []
            for sequence in sequences {
                if state.masked.contains(sequence) {
                    masked.insert(sequence)
                } else {
                    state.inFlight[sequence, default: 0] += 1
                }
            }
            return masked
        }
    }

    /// Ends the sends ``beginSending(_:)`` marked: `deliveredBy` names the sender (its lane's
    /// cursor) when the destination took them, `nil` when it did not.
    public func endSending(_ sequences: [UInt64], deliveredBy sender: String?) {
        let ready = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            var ended: [UInt64] = []
            for sequence in sequences {
                guard let sends = state.inFlight[sequence] else { continue }
                if sends > 1 {
                    state.inFlight[sequence] = sends - 1
                } else {
                    state.inFlight[sequence] = nil
                    ended.append(sequence)
                }
                if let sender, state.masked.contains(sequence) { state.deliveredWhileMasked[sender, default: []].insert(sequence) }
            }
            guard !ended.isEmpty, !state.waiters.isEmpty else { return [] }
            var ready: [CheckedContinuation<Void, Never>] = []
            var kept: [Waiter] = []
            for var waiter in state.waiters {
                waiter.pending.subtract(ended)
                if waiter.pending.isEmpty { ready.append(waiter.continuation) } else { kept.append(waiter) }
            }
            state.waiters = kept
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// `events` with the masked ones as erased entries.
    package func apply(to events: inout [SequencedEvent]) {
        guard !isEmpty else { return }
        state.withLockedValue { state in
            for index in events.indices where state.masked.contains(events[index].sequence) {
                if case .erased = events[index].event { continue }
                events[index].event = .erased(ErasedEntry(erasing: events[index].event))
            }
        }
    }
}

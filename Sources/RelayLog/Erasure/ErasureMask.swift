import NIOConcurrencyHelpers
import RelayCore
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
public final class ErasureMask: Sendable {
    private let sequences = NIOLockedValueBox<Set<UInt64>>([])
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
        return ErasureMask(plans.flatMap { $0.targets.map(\.sequence) })
    }

    /// Whether nothing is masked.
    public var isEmpty: Bool { count.load(ordering: .acquiring) == 0 }

    /// Whether `sequence` is masked.
    public func contains(_ sequence: UInt64) -> Bool {
        guard !isEmpty else { return false }
        return sequences.withLockedValue { $0.contains(sequence) }
    }

    /// Masks `added` from now on.
    public func insert(_ added: some Sequence<UInt64>) {
        sequences.withLockedValue { set in
            set.formUnion(added)
            count.store(set.count, ordering: .releasing)
        }
    }

    /// `events` with the masked ones as erased entries.
    func apply(to events: inout [SequencedEvent]) {
        guard !isEmpty else { return }
        sequences.withLockedValue { set in
            for index in events.indices where set.contains(events[index].sequence) {
                if case .erased = events[index].event { continue }
                events[index].event = .erased(ErasedEntry(erasing: events[index].event))
            }
        }
    }
}

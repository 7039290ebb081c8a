/// What a central relay knows of the relays that hand it events: per origin relay, its current
/// epoch and the next origin sequence number it expects. O(1) per relay, with no time window.
///
/// A batch names its origin relay, the epoch its events were logged in, and the range of that
/// relay's sequence numbers it covers (a range may hold fewer events than numbers: an edge skips
/// what its own log lost to damage). The ledger decides what of it to append:
/// - at or below the mark: nothing, "already stored";
/// - overlapping the mark: only the part above it;
/// - beyond the mark: nothing, a gap, with the sequence number expected;
/// - an epoch older than the relay's current one: refused (a stale copy of the relay is running);
/// - a relay or epoch seen for the first time: all of it, from wherever it starts.
///
/// The ledger is not stored on its own: after a crash it is rebuilt from the events of the log
/// (``observe(_:)``), which keep their origin, so it can never disagree with what was appended.
public struct OriginLedger: Sendable, Hashable {
    /// Where a relay stands.
    public struct Mark: Sendable, Hashable {
        /// The relay's current epoch, as far as this relay knows.
        public var epoch: UInt32
        /// The next origin sequence number expected in that epoch.
        public var next: UInt64

        /// A mark.
        public init(epoch: UInt32, next: UInt64) {
            self.epoch = epoch
            self.next = next
        }
    }

    /// A batch's origin: which relay's events, of which epoch, covering which of its sequence numbers.
    public struct BatchOrigin: Sendable, Hashable {
        /// The origin relay's id.
        public var relayID: String
        /// The epoch the batch's events were logged in.
        public var epoch: UInt32
        /// The origin sequence numbers the batch covers (its events are among them, in order).
        public var sequences: Range<UInt64>

        /// A batch origin.
        public init(relayID: String, epoch: UInt32, sequences: Range<UInt64>) {
            self.relayID = relayID
            self.epoch = epoch
            self.sequences = sequences
        }
    }

    /// What to do with a batch.
    public enum Decision: Sendable, Hashable {
        /// Append the batch's events with origin sequences in this range (all of it, or the part
        /// above the mark), then call ``appended(_:)``.
        case append(Range<UInt64>)
        /// Everything in it is stored already: answer success, append nothing.
        case alreadyStored
        /// It starts beyond the mark: sequences are missing before it. Answer with `expected`.
        case gap(expected: UInt64)
        /// Its epoch is older than the relay's current one: refuse it.
        case staleEpoch(current: UInt32)
    }

    /// The marks, by relay id.
    public private(set) var marks: [String: Mark] = [:]

    /// An empty ledger.
    public init() {}

    /// What to do with `batch`. Nothing changes until ``appended(_:)``.
    public func decide(_ batch: BatchOrigin) -> Decision {
        guard let mark = marks[batch.relayID], batch.epoch <= mark.epoch else { return .append(batch.sequences) }
        if batch.epoch < mark.epoch { return .staleEpoch(current: mark.epoch) }
        if batch.sequences.upperBound <= mark.next { return .alreadyStored }
        if batch.sequences.lowerBound > mark.next { return .gap(expected: mark.next) }
        return .append(mark.next..<batch.sequences.upperBound)
    }

    /// Records that `batch`'s decided range is durable in the log: the mark moves to its end.
    public mutating func appended(_ batch: BatchOrigin) {
        advance(batch.relayID, epoch: batch.epoch, to: batch.sequences.upperBound)
    }

    /// Takes into account an event read back from the log with its origin (rebuilding the ledger
    /// after a restart): the mark moves past it.
    public mutating func observe(relayID: String, epoch: UInt32, sequence: UInt64) {
        advance(relayID, epoch: epoch, to: sequence &+ 1)
    }

    private mutating func advance(_ relayID: String, epoch: UInt32, to next: UInt64) {
        guard let mark = marks[relayID], epoch <= mark.epoch else {
            marks[relayID] = Mark(epoch: epoch, next: next)
            return
        }
        // An older epoch's events (read back from before a copy) never move the current mark.
        guard epoch == mark.epoch else { return }
        marks[relayID] = Mark(epoch: epoch, next: max(mark.next, next))
    }
}

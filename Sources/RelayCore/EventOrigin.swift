/// Where an event first entered a relay's log, when the entry holding it is a copy.
///
/// A dead letter re-queued with `deadletter retry` is appended again: the new entry keeps the
/// identity of the event it replaces (its sequence in this log), so the aggregator counts the event
/// once. An origin travels with the event wherever it is stored again; a copy of a copy keeps the
/// first origin.
public struct EventOrigin: Sendable, Hashable {
    /// The sequence number of the original entry in this relay's log.
    public var sequence: UInt64

    /// The origin of a copy of the entry at `sequence` of this log.
    public init(sequence: UInt64) {
        self.sequence = sequence
    }
}

/// An event's place in one relay's log: the relay (its id and the epoch of its data directory,
/// see `docs/relay-identity.md`) and the sequence number it had there.
public struct RelayPosition: Sendable, Hashable {
    /// The relay id: a UUID, in lower case.
    public let relayID: String
    /// The epoch of the relay's data directory the event was logged in (1 or more).
    public let epoch: UInt32
    /// The event's sequence number in that relay's log (1 or more).
    public let sequence: UInt64
    /// The relay id's 128 bits (high, low), parsed once: what the log stores, so appending a
    /// handed-on event never parses its text again.
    package let relayIDHigh: UInt64
    package let relayIDLow: UInt64

    /// Validates a position.
    ///
    /// - Throws: ``EventInputError`` naming `field` when the relay id is not a UUID, or the epoch
    ///   or the sequence number is 0.
    public init(relayID: String, epoch: UInt32, sequence: UInt64, field: String = "relayOrigin") throws(EventInputError) {
        guard case .uuid(let bytes, _)? = MessageID.parseUUID(relayID) else {
            throw EventInputError(field: field, "\(field).relayId \(relayID.quotedForMessage) is not a UUID")
        }
        guard epoch >= 1, sequence >= 1 else { throw EventInputError(field: field, "\(field) needs an epoch and a sequence number of 1 or more") }
        self.init(relayIDBytes: bytes, epoch: epoch, sequence: sequence)
    }

    /// A position whose values are known to be valid (decoded from the log): the relay id from its
    /// bits.
    package init(relayIDBytes bytes: MessageID.UUIDBytes, epoch: UInt32, sequence: UInt64) {
        self.init(relayID: MessageID.uuidText(bytes, uppercase: false), bytes: bytes, epoch: epoch, sequence: sequence)
    }

    private init(relayID: String, bytes: MessageID.UUIDBytes, epoch: UInt32, sequence: UInt64) {
        self.relayID = relayID
        (relayIDHigh, relayIDLow) = bytes
        self.epoch = epoch
        self.sequence = sequence
    }

    /// The same relay and epoch at another sequence number.
    package func at(sequence: UInt64) -> RelayPosition {
        RelayPosition(relayID: relayID, bytes: (relayIDHigh, relayIDLow), epoch: epoch, sequence: sequence)
    }
}

/// Where an event handed on from relay to relay comes from.
///
/// `first` is where it was first logged, kept across every hop of a chain (edge → regional →
/// central), so it is counted and attributed once, end to end. `hop` is the relay that handed it to
/// this one, when that is not the first: what this relay's deduplication of that sender keys on.
public struct ChainOrigin: Sendable, Hashable {
    /// The relay that first logged the event.
    public var first: RelayPosition
    /// The relay that handed it to this one; `nil` when that is `first`.
    public var hop: RelayPosition?

    /// An origin.
    public init(first: RelayPosition, hop: RelayPosition? = nil) {
        self.first = first
        self.hop = hop == first ? nil : hop
    }

    /// The relay that handed the event to this one.
    public var sender: RelayPosition { hop ?? first }
}

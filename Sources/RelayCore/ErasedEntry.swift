/// What stands in the log where a registration was erased at a person's request
/// (`campaign-relay erase`): the entry keeps its sequence number, its time and what says where it
/// comes from (origin, request identity, chain origin, tenant), none of which is personal data, and
/// nothing of the registration itself.
///
/// Every consumer passes over it: the aggregator counts nothing for it, the uploader and the relay
/// chain send nothing, a replay skips it. Keeping the entry (rather than a gap) keeps frames,
/// sequence numbers and every cursor and relay chain's high-water mark exactly as they were.
public struct ErasedEntry: Sendable, Hashable {
    /// When the erased registration happened.
    public var time: EventTime
    /// The entry the erased registration was a copy of; `nil` for an original.
    public var origin: EventOrigin? {
        get { wrappers?.origin }
        set { wrappers = EventWrappers.make(origin: newValue, request: request, chain: chain, tenant: tenant) }
    }
    /// The keyed request it was stored for.
    public var request: RequestIdentity? {
        get { wrappers?.request }
        set { wrappers = EventWrappers.make(origin: origin, request: newValue, chain: chain, tenant: tenant) }
    }
    /// Where it came from when another relay handed it on.
    public var chain: ChainOrigin? {
        get { wrappers?.chain }
        set { wrappers = EventWrappers.make(origin: origin, request: request, chain: newValue, tenant: tenant) }
    }
    /// The tenant it belonged to; `nil` for the default tenant.
    public var tenant: TenantName? {
        get { wrappers?.tenant }
        set { wrappers = EventWrappers.make(origin: origin, request: request, chain: chain, tenant: newValue) }
    }
    private var wrappers: EventWrappers?

    /// An erased entry of `time`, without wrappers.
    public init(time: EventTime) {
        self.time = time
    }

    /// What is left of `event` once erased: its time and wrappers.
    public init(erasing event: Event) {
        self.time = event.time
        self.origin = event.origin
        self.request = event.request
        self.chain = event.chain
        self.tenant = event.tenant
    }
}

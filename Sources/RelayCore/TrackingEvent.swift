/// A push tracking hit: a notification of a delivery was displayed, opened or clicked.
public struct TrackingEvent: Sendable, Hashable {
    /// What happened to the notification.
    public var action: TrackingAction
    /// The message (broadlog) identifier, `_mId` of the push payload.
    public var messageId: MessageID
    /// The delivery identifier, `_dId` of the push payload; opaque, sent upstream verbatim.
    public var deliveryId: String
    /// The app's integration key (`mobileAppUuid`), when the sender knows it.
    public var integrationKey: String?
    /// When the hit happened (default: when the relay ingested it).
    public var time: EventTime
    /// The entry this one is a copy of (a re-queued dead letter); `nil` for an original.
    public var origin: EventOrigin? {
        get { wrappers?.origin }
        set { wrappers = EventWrappers.make(origin: newValue, request: request, chain: chain, tenant: tenant) }
    }
    /// The keyed request it was stored for; `nil` when it came without an `Idempotency-Key`.
    public var request: RequestIdentity? {
        get { wrappers?.request }
        set { wrappers = EventWrappers.make(origin: origin, request: newValue, chain: chain, tenant: tenant) }
    }
    /// Where it comes from when another relay handed it on; `nil` when it was logged here first.
    public var chain: ChainOrigin? {
        get { wrappers?.chain }
        set { wrappers = EventWrappers.make(origin: origin, request: request, chain: newValue, tenant: tenant) }
    }
    /// The tenant the hit belongs to (the first path segment it came in on); `nil` for the default
    /// tenant (see ``TenantName``).
    public var tenant: TenantName? {
        get { wrappers?.tenant }
        set { wrappers = EventWrappers.make(origin: origin, request: request, chain: chain, tenant: newValue) }
    }
    /// ``origin``, ``request``, ``chain`` and ``tenant``, out of line (see ``EventWrappers``).
    private var wrappers: EventWrappers?

    /// Creates a tracking event; the values are expected to be valid already (see ``EventDecoder``).
    public init(action: TrackingAction, messageId: MessageID, deliveryId: String, integrationKey: String? = nil, time: EventTime) {
        self.action = action
        self.messageId = messageId
        self.deliveryId = deliveryId
        self.integrationKey = integrationKey
        self.time = time
    }
}

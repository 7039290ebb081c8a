/// One event the relay carries: a push tracking hit or a device registration.
public enum Event: Sendable, Hashable {
    /// A push tracking hit (impression, open, click).
    case tracking(TrackingEvent)
    /// A device registration.
    ///
    /// Boxed (`indirect`): an enum is as large as its largest case, and a registration (360
    /// bytes) is half as large again as a tracking hit (232), so unboxed every tracking event, the
    /// bulk of the traffic, would be moved and copied at a registration's size on every step of
    /// its way (``EventLayoutTests``).
    indirect case registration(Registration)
    /// A registration erased at a person's request (see ``ErasedEntry``): consumers pass over it.
    case erased(ErasedEntry)

    /// The entry this event is a copy of; `nil` for an original (see ``EventOrigin``).
    public var origin: EventOrigin? {
        get {
            switch self {
            case .tracking(let event): event.origin
            case .registration(let registration): registration.origin
            case .erased(let entry): entry.origin
            }
        }
        set {
            switch self {
            case .tracking(var event):
                event.origin = newValue
                self = .tracking(event)
            case .registration(var registration):
                registration.origin = newValue
                self = .registration(registration)
            case .erased(var entry):
                entry.origin = newValue
                self = .erased(entry)
            }
        }
    }

    /// The keyed request the event was stored for (see ``RequestIdentity``).
    public var request: RequestIdentity? {
        get {
            switch self {
            case .tracking(let event): event.request
            case .registration(let registration): registration.request
            case .erased(let entry): entry.request
            }
        }
        set {
            switch self {
            case .tracking(var event):
                event.request = newValue
                self = .tracking(event)
            case .registration(var registration):
                registration.request = newValue
                self = .registration(registration)
            case .erased(var entry):
                entry.request = newValue
                self = .erased(entry)
            }
        }
    }

    /// Where the event comes from when another relay handed it on (see ``ChainOrigin``).
    public var chain: ChainOrigin? {
        get {
            switch self {
            case .tracking(let event): event.chain
            case .registration(let registration): registration.chain
            case .erased(let entry): entry.chain
            }
        }
        set {
            switch self {
            case .tracking(var event):
                event.chain = newValue
                self = .tracking(event)
            case .registration(var registration):
                registration.chain = newValue
                self = .registration(registration)
            case .erased(var entry):
                entry.chain = newValue
                self = .erased(entry)
            }
        }
    }

    /// The tenant the event belongs to; `nil` for the default tenant (see ``TenantName``).
    public var tenant: TenantName? {
        get {
            switch self {
            case .tracking(let event): event.tenant
            case .registration(let registration): registration.tenant
            case .erased(let entry): entry.tenant
            }
        }
        set {
            switch self {
            case .tracking(var event):
                event.tenant = newValue
                self = .tracking(event)
            case .registration(var registration):
                registration.tenant = newValue
                self = .registration(registration)
            case .erased(var entry):
                entry.tenant = newValue
                self = .erased(entry)
            }
        }
    }

    /// When the event happened.
    public var time: EventTime {
        switch self {
        case .tracking(let event): event.time
        case .registration(let registration): registration.time
        case .erased(let entry): entry.time
        }
    }
}

/// An event read back from the log, with the sequence number the log gave it.
public struct SequencedEvent: Sendable, Hashable {
    /// The event's position in the log: unique, and increasing in the order events were appended.
    public var sequence: UInt64
    /// The event.
    public var event: Event

    /// Pairs an event with its sequence number.
    public init(sequence: UInt64, event: Event) {
        self.sequence = sequence
        self.event = event
    }
}

/// What wraps an event that is not an original of this relay's own intake for the default tenant: a
/// copy's origin, a keyed request's identity, another relay's chain origin, the tenant it belongs to. Kept out of line, as one reference,
/// because most events have none of them: a ``TrackingEvent`` then takes 104 bytes instead of 232,
/// and every stage that moves events in arrays (decoding, the group commit, the log's readers)
/// copies half as much.
///
/// Immutable: setting a field on an event makes a new box (or none, when every field is `nil`),
/// so two events that wrap the same things compare equal however they were built.
final class EventWrappers: Sendable, Hashable {
    let origin: EventOrigin?
    let request: RequestIdentity?
    let chain: ChainOrigin?
    let tenant: TenantName?

    private init(origin: EventOrigin?, request: RequestIdentity?, chain: ChainOrigin?, tenant: TenantName?) {
        self.origin = origin
        self.request = request
        self.chain = chain
        self.tenant = tenant
    }

    /// The box for these fields, or `nil` when there is nothing to wrap.
    static func make(origin: EventOrigin?, request: RequestIdentity?, chain: ChainOrigin?, tenant: TenantName?) -> EventWrappers? {
        origin == nil && request == nil && chain == nil && tenant == nil
            ? nil : EventWrappers(origin: origin, request: request, chain: chain, tenant: tenant)
    }

    static func == (left: EventWrappers, right: EventWrappers) -> Bool {
        left.origin == right.origin && left.request == right.request && left.chain == right.chain && left.tenant == right.tenant
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(origin)
        hasher.combine(request)
        hasher.combine(chain)
        hasher.combine(tenant)
    }
}

/// What a way in takes of a decoded event beyond its syntax: the integration-key rule
/// (`--integration-key`) and, where producers hand events in, the fields only relays set.
///
/// It is applied where events are decoded (``problems(of:)``, called by the JSON decoders and by
/// the SDK routes), once for every way in: an SDK registration, `POST /v1/events` and
/// `campaign-relay ingest` refuse the same keys with the same words, and a refused event is
/// reported as a problem of its line or index like any other.
public struct EventAdmission: Sendable, Hashable {
    /// The integration keys whose events of the default tenant are taken; empty: any key.
    public var integrationKeys: Set<String>
    /// Whether a request identity (`request`) or a relay origin (`relayOrigin`) is refused: they
    /// are set by the relay for keyed requests and by relays handing events to one another, never
    /// by a producer posting events.
    public var refusesRelaySetFields: Bool
    /// The tenants an event may name in its `tenant` field, each with the integration keys its
    /// events may carry (empty: any); `nil`: any tenant, any key. An event of another tenant is
    /// refused, so nothing is stored for a tenant this relay has no hosts, keys or counts for.
    public var tenantKeys: [TenantName: Set<String>]?

    /// The tenants an event may name (`nil`: any).
    public var declaredTenants: Set<TenantName>? { tenantKeys.map { Set($0.keys) } }

    /// Takes the default tenant's events of `integrationKeys` (empty: any key) and the events of
    /// the tenants of `tenantKeys` with their keys (none by default: only the default tenant's),
    /// refusing the fields only relays set when `refusesRelaySetFields`.
    public init(integrationKeys: Set<String> = [], refusesRelaySetFields: Bool = false, tenantKeys: [TenantName: Set<String>]? = [:]) {
        self.integrationKeys = integrationKeys
        self.refusesRelaySetFields = refusesRelaySetFields
        self.tenantKeys = tenantKeys
    }

    /// Takes the default tenant's events of `integrationKeys` and the events of
    /// `declaredTenants` (any key).
    public init(integrationKeys: Set<String> = [], refusesRelaySetFields: Bool = false, declaredTenants: Set<TenantName>?) {
        self.init(
            integrationKeys: integrationKeys, refusesRelaySetFields: refusesRelaySetFields,
            tenantKeys: declaredTenants.map { Dictionary(uniqueKeysWithValues: $0.map { ($0, []) }) })
    }

    /// Takes every event that decodes, whatever tenant it names.
    public static let anyEvent = EventAdmission(tenantKeys: nil)

    /// Whether every event that decodes is taken (nothing to check).
    public var takesEveryEvent: Bool { integrationKeys.isEmpty && !refusesRelaySetFields && tenantKeys == nil }

    /// Why `event` is not taken, in field order (integration key, tenant, request, relay origin);
    /// empty when it is.
    public func problems(of event: Event) -> [EventInputError] {
        guard !takesEveryEvent else { return [] }
        var problems: [EventInputError] = []
        if let problem = keyProblem(of: event) { problems.append(problem) }
        if let tenant = event.tenant {
            if refusesRelaySetFields {
                problems.append(EventInputError(field: "tenant", "tenant is given by the path (/{tenant}/v1/events); leave it out"))
            } else if let tenantKeys, tenantKeys[tenant] == nil {
                problems.append(EventInputError(field: "tenant", "tenant \(tenant.text.quotedForMessage) is not declared on this relay"))
            }
        }
        if refusesRelaySetFields {
            if event.request != nil {
                problems.append(EventInputError(field: "request", "request is set by the relay for a request with an Idempotency-Key; leave it out"))
            }
            if event.chain != nil {
                problems.append(
                    EventInputError(field: "relayOrigin", "relayOrigin is set by relays handing events to one another; leave it out"))
            }
        }
        return problems
    }

    /// The integration-key rule alone (the event's tenant's keys); `nil` when the event's key is
    /// allowed (or it has none).
    public func keyProblem(of event: Event) -> EventInputError? {
        let integrationKeys = event.tenant.map { tenantKeys?[$0] ?? [] } ?? self.integrationKeys
        guard !integrationKeys.isEmpty else { return nil }
        let key: String?
        switch event {
        case .tracking(let hit): key = hit.integrationKey
        case .registration(let registration): key = registration.integrationKey
        case .erased: key = nil
        }
        guard let key, !integrationKeys.contains(key) else { return nil }
        return EventInputError(field: "integrationKey", "integration key \(key.quotedForMessage) is not known to this relay (UnknownUUID)")
    }
}

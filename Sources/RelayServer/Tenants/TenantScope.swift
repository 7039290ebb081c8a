import RelayCore

/// What a request is served as: the default tenant (no path prefix) or one tenant (`/{tenant}/…`),
/// with the rules its events are taken by.
final class TenantScope: Sendable {
    /// The tenant; `nil` for the default tenant.
    let name: TenantName?
    /// The rule of its SDK endpoints: its integration keys.
    let sdkAdmission: EventAdmission
    /// The rule of its `POST /v1/events`: its integration keys, and no field only relays set
    /// (`tenant` included: the path gives it).
    let eventsAdmission: EventAdmission
    /// A bearer token that sees this tenant alone on the admin endpoints.
    let adminToken: String?

    /// The scope of `name` taking `integrationKeys` (empty: any).
    init(name: TenantName?, integrationKeys: Set<String>, adminToken: String?) {
        self.name = name
        self.adminToken = adminToken
        // Events are decoded without a tenant and given the scope's after: the default tenant's
        // keys are the ones checked (see `EventAdmission.keyProblem`).
        sdkAdmission = EventAdmission(integrationKeys: integrationKeys)
        eventsAdmission = EventAdmission(integrationKeys: integrationKeys, refusesRelaySetFields: true)
    }

    /// `event` given this scope's tenant (the default tenant's is left as it is).
    func claim(_ event: inout Event) {
        if let name { event.tenant = name }
    }

    /// `events` given this scope's tenant (the default tenant's are left as they are).
    func claim(_ events: inout [Event]) {
        guard name != nil else { return }
        for index in events.indices { claim(&events[index]) }
    }

    /// What the metrics and the answers call it: its name, or `default`.
    var displayName: String { name.displayName }
}

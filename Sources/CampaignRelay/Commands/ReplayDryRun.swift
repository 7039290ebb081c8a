import RelayCore
import RelayForwarding
import RelayLog

/// `replay --dry-run`: what a replay of the range would send, counted by reading it, sending
/// nothing: events per host of each tenant, hits per delivery and action, registrations per app.
/// A replay reads it too, to say which events it could not send (a tenant with no hosts here).
struct ReplayDryRun: Encodable {
    /// What one host would receive.
    struct HostCount: Encodable {
        var url: String?
        var events: Int
    }

    /// What one tenant's hosts would receive.
    struct TenantCount: Encodable {
        var tenant: String
        /// Whether `--config` declares it (`[tenant.NAME]`): an undeclared tenant has no hosts.
        var declared: Bool
        var tracking: HostCount
        var marketing: HostCount

        /// Its events no host of it would take.
        var unsent: Int { (tracking.url == nil ? tracking.events : 0) + (marketing.url == nil ? marketing.events : 0) }
    }

    /// The hits of one delivery in the range.
    struct DeliveryCount: Encodable {
        var tenant: String
        var deliveryId: String
        var impressions = 0
        var opens = 0
        var clicks = 0
    }

    /// The registrations of one app in the range.
    struct AppCount: Encodable {
        var tenant: String
        var integrationKey: String
        var platform: String
        var registrations = 0
    }

    var dryRun = true
    /// The default tenant's tracking hits, for the tracking host (counted even without one: what
    /// it would get).
    var tracking: HostCount
    /// The default tenant's registrations, for the marketing host.
    var marketing: HostCount
    /// Each tenant with events in the range, or declared, in name order.
    var tenants: [TenantCount]
    var deliveries: [DeliveryCount]
    var registrations: [AppCount]
    /// What of the range is not in the log (``ReplayRange/missing(in:)``).
    var missing: [String]

    /// The events of tenants that no host here would take (an undeclared tenant, or a declared one
    /// without a host of that kind).
    var unsent: Int { tenants.reduce(0) { $0 + $1.unsent } }

    /// Counts the range in `stored` (files with an archive's segments, or a stream in PostgreSQL), each
    /// event toward its tenant's hosts: `trackingURL` and `marketingURL` for the default tenant's,
    /// `tenants`' own for theirs.
    static func count(
        _ stored: StoredLog, range: ReplayRange, trackingURL: String?, marketingURL: String?,
        tenants declared: [TenantDestinations], missing: [String]
    ) throws(LogError) -> ReplayDryRun {
        var deliveries: [String: DeliveryCount] = [:]
        var apps: [String: AppCount] = [:]
        // Hits and registrations per tenant, `nil` the default one.
        var hits: [TenantName?: Int] = [:]
        var registrations: [TenantName?: Int] = [:]
        var reader = stored.steps(from: range.sequences.lowerBound)
        defer { reader.close() }
        while true {
            let batch = try reader.read(maximumEvents: 65_536, below: range.sequences.upperBound)
            guard !batch.events.isEmpty else { break }
            for sequenced in batch.events {
                if let times = range.times, !times.contains(sequenced.event.time.nanosecondsSinceEpoch) { continue }
                switch sequenced.event {
                case .tracking(let hit):
                    hits[hit.tenant, default: 0] += 1
                    let tenant = hit.tenant.displayName
                    let key = tenant + "\u{1F}" + hit.deliveryId
                    var count = deliveries[key] ?? DeliveryCount(tenant: tenant, deliveryId: hit.deliveryId)
                    switch hit.action {
                    case .impression: count.impressions += 1
                    case .open: count.opens += 1
                    case .click: count.clicks += 1
                    }
                    deliveries[key] = count
                case .erased:
                    continue
                case .registration(let registration):
                    registrations[registration.tenant, default: 0] += 1
                    let tenant = registration.tenant.displayName
                    let key = tenant + "\u{1F}" + registration.platform.rawValue + "\u{1F}" + registration.integrationKey
                    var count =
                        apps[key] ?? AppCount(tenant: tenant, integrationKey: registration.integrationKey, platform: registration.platform.rawValue)
                    count.registrations += 1
                    apps[key] = count
                }
            }
        }
        let byName = Dictionary(declared.map { ($0.tenant, $0) }, uniquingKeysWith: { first, _ in first })
        let named = Set(hits.keys.compactMap { $0 } + registrations.keys.compactMap { $0 } + byName.keys)
        let tenants = named.sorted().map { tenant in
            TenantCount(
                tenant: tenant.text, declared: byName[tenant] != nil,
                tracking: HostCount(url: byName[tenant]?.trackingHost?.description, events: hits[tenant] ?? 0),
                marketing: HostCount(url: byName[tenant]?.marketingHost?.description, events: registrations[tenant] ?? 0))
        }
        return ReplayDryRun(
            tracking: HostCount(url: trackingURL, events: hits[nil] ?? 0), marketing: HostCount(url: marketingURL, events: registrations[nil] ?? 0),
            tenants: tenants, deliveries: deliveries.values.sorted { ($0.tenant, $0.deliveryId) < ($1.tenant, $1.deliveryId) },
            registrations: apps.values.sorted { ($0.tenant, $0.integrationKey, $0.platform) < ($1.tenant, $1.integrationKey, $1.platform) },
            missing: missing)
    }

    /// Every event of the range, whichever tenant's.
    var events: Int { tracking.events + marketing.events + tenants.reduce(0) { $0 + $1.tracking.events + $1.marketing.events } }

    /// The counts as a person reads them.
    var text: String {
        var lines = [
            "dry run: nothing was sent.",
            "tracking host \(tracking.url ?? "(none given)"): \(counted(tracking.events, "hit"))",
            "marketing host \(marketing.url ?? "(none given)"): \(counted(marketing.events, "registration"))",
        ]
        for tenant in tenants {
            lines.append(
                "tenant \(tenant.tenant): "
                    + (tenant.declared
                        ? "tracking host \(tenant.tracking.url ?? "(none: not sent)"): \(counted(tenant.tracking.events, "hit")), marketing host \(tenant.marketing.url ?? "(none: not sent)"): \(counted(tenant.marketing.events, "registration"))"
                        : "not declared in --config, not sent: \(counted(tenant.tracking.events, "hit")), \(counted(tenant.marketing.events, "registration"))")
            )
        }
        let showsTenants = !tenants.isEmpty
        if !deliveries.isEmpty {
            lines.append("per delivery (impressions / opens / clicks):")
            for delivery in deliveries {
                let name = showsTenants ? "\(delivery.tenant) \(delivery.deliveryId)" : delivery.deliveryId
                lines.append("  \(name): \(delivery.impressions) / \(delivery.opens) / \(delivery.clicks)")
            }
        }
        if !registrations.isEmpty {
            lines.append("registrations per app:")
            for app in registrations {
                lines.append("  \(showsTenants ? app.tenant + " " : "")\(app.integrationKey) (\(app.platform)): \(app.registrations)")
            }
        }
        lines += missing.map { "missing: " + $0 }
        return lines.joined(separator: "\n")
    }

    /// The line saying which tenants' events a replay could not send, and what to do; `nil` when
    /// every tenant's events had a host.
    var unsentText: String? {
        let parts = tenants.filter { $0.unsent > 0 }.map { tenant in
            tenant.declared
                ? "\(tenant.tenant) (\(counted(tenant.unsent, "event")) for a host its [tenant.\(tenant.tenant)] does not name)"
                : "\(tenant.tenant) (\(counted(tenant.unsent, "event")), not declared)"
        }
        guard !parts.isEmpty else { return nil }
        return
            "not replayed: \(counted(unsent, "event")) of tenants with no host here for them: \(parts.joined(separator: ", ")); give --config the [tenant.NAME] tables with their hosts"
    }
}

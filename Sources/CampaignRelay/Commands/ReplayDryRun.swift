import RelayCore
import RelayLog

/// `replay --dry-run`: what a replay of the range would send, counted by reading it, sending
/// nothing: events per host, hits per delivery and action, registrations per app.
struct ReplayDryRun: Encodable {
    /// What one host would receive.
    struct HostCount: Encodable {
        var url: String?
        var events: Int
    }

    /// The hits of one delivery in the range.
    struct DeliveryCount: Encodable {
        var deliveryId: String
        var impressions = 0
        var opens = 0
        var clicks = 0
    }

    /// The registrations of one app in the range.
    struct AppCount: Encodable {
        var integrationKey: String
        var platform: String
        var registrations = 0
    }

    var dryRun = true
    /// Tracking hits, for the tracking host (counted even without one: what it would get).
    var tracking: HostCount
    /// Registrations, for the marketing host.
    var marketing: HostCount
    var deliveries: [DeliveryCount]
    var registrations: [AppCount]
    /// What of the range is not in the log (``ReplayRange/missing(in:)``).
    var missing: [String]

    /// Counts the range in the log at `walDirectory` (with the archive's segments, if any).
    static func count(
        walDirectory: String, archiveDirectory: String?, range: ReplayRange, trackingURL: String?, marketingURL: String?, missing: [String],
        keys: LogKeyRing?
    ) throws(LogError) -> ReplayDryRun {
        var deliveries: [String: DeliveryCount] = [:]
        var apps: [String: AppCount] = [:]
        var hits = 0
        var registrations = 0
        var reader = LogReader(walDirectory: walDirectory, archiveDirectory: archiveDirectory, from: range.sequences.lowerBound, keys: keys)
        defer { reader.close() }
        while true {
            let batch = try reader.read(maximumEvents: 65_536, below: range.sequences.upperBound)
            guard !batch.events.isEmpty else { break }
            for sequenced in batch.events {
                if let times = range.times, !times.contains(sequenced.event.time.nanosecondsSinceEpoch) { continue }
                switch sequenced.event {
                case .tracking(let hit):
                    hits += 1
                    var count = deliveries[hit.deliveryId] ?? DeliveryCount(deliveryId: hit.deliveryId)
                    switch hit.action {
                    case .impression: count.impressions += 1
                    case .open: count.opens += 1
                    case .click: count.clicks += 1
                    }
                    deliveries[hit.deliveryId] = count
                case .erased:
                    continue
                case .registration(let registration):
                    registrations += 1
                    let key = registration.platform.rawValue + "\u{1F}" + registration.integrationKey
                    var count = apps[key] ?? AppCount(integrationKey: registration.integrationKey, platform: registration.platform.rawValue)
                    count.registrations += 1
                    apps[key] = count
                }
            }
        }
        return ReplayDryRun(
            tracking: HostCount(url: trackingURL, events: hits), marketing: HostCount(url: marketingURL, events: registrations),
            deliveries: deliveries.values.sorted { $0.deliveryId < $1.deliveryId },
            registrations: apps.values.sorted { ($0.integrationKey, $0.platform) < ($1.integrationKey, $1.platform) }, missing: missing)
    }

    /// The counts as a person reads them.
    var text: String {
        var lines = [
            "dry run: nothing was sent.",
            "tracking host \(tracking.url ?? "(none given)"): \(counted(tracking.events, "hit"))",
            "marketing host \(marketing.url ?? "(none given)"): \(counted(marketing.events, "registration"))",
        ]
        if !deliveries.isEmpty {
            lines.append("per delivery (impressions / opens / clicks):")
            for delivery in deliveries {
                lines.append("  \(delivery.deliveryId): \(delivery.impressions) / \(delivery.opens) / \(delivery.clicks)")
            }
        }
        if !registrations.isEmpty {
            lines.append("registrations per app:")
            for app in registrations { lines.append("  \(app.integrationKey) (\(app.platform)): \(app.registrations)") }
        }
        lines += missing.map { "missing: " + $0 }
        return lines.joined(separator: "\n")
    }
}

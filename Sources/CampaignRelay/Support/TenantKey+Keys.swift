import CampaignProtocol
import RelayCore
import RelayServer
import TOMLKit

extension TenantKey {
    /// Every key a `[tenant.NAME]` table takes, in the order `config check` shows them and the
    /// docs list them. A new per-tenant key is one more entry here (and the field of
    /// `TenantConfiguration` it sets, which `serve` uses).
    static let all: [TenantKey] = [trackingHost, marketingHost, caFile, maximumRate, integrationKey, adminToken, logShare]

    /// `tracking-host`: where the tenant's tracking hits go.
    static let trackingHost = TenantKey(
        "tracking-host",
        help:
            "where its tracking hits go: lanes of its own (`upload-tracking_NAME`), with their own breaker, backoff, connections and dead letters; a list names spare hosts after the first, each with a breaker and limit of its own, sharing the load"
    ) { value, place, tenant throws(ConfigurationFile.Failure) in
        let hosts = try campaignHosts(value, place: place, role: "tracking-host")
        (tenant.destinations.trackingHost, tenant.destinations.trackingSpareHosts) = (hosts.first, Array(hosts.dropFirst()))
        return shown(hosts)
    }

    /// `marketing-host`: where the tenant's registrations go.
    static let marketingHost = TenantKey(
        "marketing-host", help: "where its registrations go (`upload-marketing_NAME`); a list names spare hosts after the first, as `tracking-host`"
    ) { value, place, tenant throws(ConfigurationFile.Failure) in
        let hosts = try campaignHosts(value, place: place, role: "marketing-host")
        (tenant.destinations.marketingHost, tenant.destinations.marketingSpareHosts) = (hosts.first, Array(hosts.dropFirst()))
        return shown(hosts)
    }

    /// A host as `config check` shows it, or a list of them (with spares).
    private static func shown(_ hosts: [CampaignHost]) -> Shown {
        let texts = hosts.map(\.description)
        guard texts.count > 1 else { return Shown(text: texts.first, json: .string(texts.first ?? "")) }
        return Shown(text: "[" + texts.map { JSONText.quoted($0) }.joined(separator: ", ") + "]", json: .strings(texts))
    }

    /// `ca-file`: the CAs the tenant's hosts' certificates are checked against.
    static let caFile = TenantKey(
        "ca-file", help: "a PEM file of the CAs its hosts' certificates are checked against (default: the relay's `ca-file`)"
    ) { value, place, tenant throws(ConfigurationFile.Failure) in
        guard let text = value.string, !text.isEmpty else { throw ConfigurationFile.Failure(description: "\(place) takes a file path") }
        try TenantTable.requireReadable(text, place: place)
        tenant.destinations.trustedCertificateAuthorities = text
        return Shown(text: text, json: .string(text))
    }

    /// `max-rate`: the tenant's own rate ceiling.
    static let maximumRate = TenantKey(
        "max-rate",
        help:
            "requests (hits or registrations) started per second to each of its hosts, at most, in place of the relay's `max-rate` (default: the relay's)"
    ) { value, place, tenant throws(ConfigurationFile.Failure) in
        guard let rate = value.int, rate >= 1 else {
            throw ConfigurationFile.Failure(description: "\(place) takes a whole number of requests a second, at least 1")
        }
        tenant.destinations.maximumRate = rate
        return Shown(text: String(rate), json: .integer(Int64(rate)))
    }

    /// `integration-key`: the integration keys the tenant's endpoints take.
    static let integrationKey = TenantKey(
        "integration-key", help: "the integration keys its SDK endpoints and `POST /NAME/v1/events` take (a list; default: any)",
        jsonName: "integrationKeys", unsetJSON: .strings([])
    ) { value, place, tenant throws(ConfigurationFile.Failure) in
        let keys = value.array.map { array in array.compactMap(\.string) } ?? value.string.map { [$0] }
        guard let keys, keys.count == (value.array?.count ?? 1), keys.allSatisfy({ !$0.isEmpty }) else {
            throw ConfigurationFile.Failure(description: "\(place) takes a list of non-empty strings")
        }
        if let repeated = Dictionary(grouping: keys, by: { $0 }).first(where: { $0.value.count > 1 })?.key {
            throw ConfigurationFile.Failure(description: "\(place): \(JSONText.quoted(repeated)) is listed twice")
        }
        tenant.integrationKeys = Set(keys)
        // Shown in the file's order.
        return Shown(text: keys.isEmpty ? nil : "[" + keys.map { JSONText.quoted($0) }.joined(separator: ", ") + "]", json: .strings(keys))
    }

    /// `admin-token`: a token that sees this tenant alone on the admin endpoints.
    static let adminToken = TenantKey(
        "admin-token",
        help:
            "a bearer token (16 characters or more, no other tenant's nor the relay's) that reads `/NAME/v1/deliveries`, `/NAME/v1/deadletters` and `/NAME/v1/status` alone; anywhere else it gets 403"
    ) { value, place, tenant throws(ConfigurationFile.Failure) in
        guard let text = value.string else { throw ConfigurationFile.Failure(description: "\(place) takes a string") }
        guard text.count >= 16 else { throw ConfigurationFile.Failure(description: "\(place) must be at least 16 characters") }
        tenant.adminToken = text
        return Shown(text: "(hidden)", json: .string("(hidden)"))
    }

    /// `max-wal-bytes`: the tenant's log share (the name users' files already use).
    static let logShare = TenantKey(
        "max-wal-bytes",
        help:
            "its log share, in bytes: the most bytes of its events (encoded, before compression) its own hosts have not taken yet. Past it, its requests get 503 with `Retry-After: 30` while every other tenant's are still acknowledged; once its hosts catch up it is taken again. At most the relay's `max-wal-bytes`, which limits the disk for every tenant together. Needs hosts (on a relay with `upstream-relay`, the central relay taking its events is what releases it)."
    ) { value, place, tenant throws(ConfigurationFile.Failure) in
        guard let bytes = value.int, bytes > 0 else { throw ConfigurationFile.Failure(description: "\(place) takes a positive number of bytes") }
        tenant.logShareBytes = Int64(bytes)
        return Shown(text: String(bytes), json: .integer(Int64(bytes)))
    }

    /// A Campaign host URL, or a list of them (the first, then its spares), as the options take them.
    private static func campaignHosts(_ value: any TOMLValueConvertible, place: String, role: String) throws(ConfigurationFile.Failure)
        -> [CampaignHost]
    {
        let texts = value.array.map { array in array.compactMap(\.string) } ?? value.string.map { [$0] }
        guard let texts, !texts.isEmpty, texts.count == (value.array?.count ?? 1) else {
            throw ConfigurationFile.Failure(description: "\(place) takes a URL string, or a list of them (the first host, then its spares)")
        }
        guard Set(texts).count == texts.count else {
            throw ConfigurationFile.Failure(description: "\(place) names a host twice: each spare is another host")
        }
        var hosts: [CampaignHost] = []
        for text in texts {
            do {
                hosts.append(try CampaignHost(parsing: text, role: role))
            } catch {
                throw ConfigurationFile.Failure(description: "\(place): \(error.description)")
            }
        }
        return hosts
    }
}

import CampaignProtocol
import Foundation
import RelayCore
import RelayForwarding
import RelayServer
import TOMLKit

/// One `[tenant.NAME]` table of a configuration file: a tenant's own Campaign hosts, CA file,
/// integration keys and admin token (README, "Tenants"; `docs/configuration.md`).
///
/// Read by ``ConfigurationFile`` with the rest of the file, so `config check` reports a mistake
/// here as it reports any other: the file, the line and the key.
struct TenantTable: Sendable, Hashable {
    /// The keys a tenant's table takes, with what each is, for "did you mean" and the docs.
    static let keys: [String: String] = [
        "tracking-host": "where its tracking hits go",
        "marketing-host": "where its registrations go",
        "ca-file": "a PEM file of the CAs its hosts' certificates are checked against (default: the relay's ca-file)",
        "integration-key": "the integration keys its SDK endpoints take (a list; default: any)",
        "admin-token": "a bearer token that sees this tenant alone on the admin endpoints (16 characters or more)",
        "max-wal-bytes": "its share of the log: the most bytes of its events its hosts may owe before its requests get 503",
    ]

    /// The tenant.
    var name: TenantName
    /// Its tracking host, as written.
    var trackingHost: CampaignHost?
    /// Its marketing host, as written.
    var marketingHost: CampaignHost?
    /// Its CA file.
    var caFile: String?
    /// The integration keys its SDK endpoints take; empty: any.
    var integrationKeys: [String]
    /// Its admin token.
    var adminToken: String?
    /// Its share of the log, in bytes.
    var maximumLogBytes: Int64?
    /// The line of its `[tenant.NAME]` header.
    var line: Int
    /// The line of each key it sets.
    var keyLines: [String: Int]

    /// The table's name as its header writes it.
    var header: String { "[tenant.\(name.text)]" }

    /// Reads the tables under `tenant` of the file at `path` (whose text is `lines`).
    ///
    /// - Throws: ``ConfigurationFile/Failure`` naming the file, the line and the key: a name that
    ///   breaks the rules of names, a key a tenant does not take, a value of the wrong type, an
    ///   unusable host, a repeated integration key, a short admin token or one two tenants share.
    static func tables(_ value: any TOMLValueConvertible, path: String, lines: [String]) throws(ConfigurationFile.Failure) -> [TenantTable] {
        let headerLine = ConfigurationFile.line(ofTable: "tenant", in: lines)
        guard let tenants = value.table else {
            let line = ConfigurationFile.line(ofKey: "tenant", table: nil, in: lines)
            throw ConfigurationFile.Failure(description: "\(path):\(line): tenant: tenants are tables, [tenant.NAME] (e.g. [tenant.brand-a])")
        }
        var tables: [TenantTable] = []
        for name in tenants.keys.sorted(by: {
            ConfigurationFile.line(ofTable: "tenant.\($0)", in: lines) < ConfigurationFile.line(ofTable: "tenant.\($1)", in: lines)
        }) {
            let line = ConfigurationFile.line(ofTable: "tenant.\(name)", in: lines)
            guard let table = tenants[name]?.table else {
                let keyLine = max(ConfigurationFile.line(ofKey: name, table: "tenant", in: lines), headerLine)
                throw ConfigurationFile.Failure(
                    description: "\(path):\(keyLine): [tenant] \(name): a tenant is a table of its own, [tenant.NAME], with its keys under it")
            }
            tables.append(try tenantTable(name: name, table, line: line, path: path, lines: lines))
        }
        var owners: [String: String] = [:]
        for table in tables {
            guard let token = table.adminToken else { continue }
            if let other = owners[token] {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(table.keyLines["admin-token"] ?? table.line): admin-token of \(table.header) is also \(other)'s: each tenant needs its own token"
                )
            }
            owners[token] = table.header
        }
        return tables
    }

    private static func tenantTable(name: String, _ table: TOMLTable, line: Int, path: String, lines: [String]) throws(ConfigurationFile.Failure)
        -> TenantTable
    {
        let tenant: TenantName
        do {
            tenant = try TenantName(validating: name)
        } catch {
            throw ConfigurationFile.Failure(description: "\(path):\(line): [tenant.\(name)]: the name \(error.message.dropFirst("tenant ".count))")
        }
        var result = TenantTable(name: tenant, integrationKeys: [], line: line, keyLines: [:])
        let scope = "tenant.\(name)"
        for key in table.keys.sorted() {
            guard let value = table[key] else { continue }
            let keyLine = ConfigurationFile.line(ofKey: key, table: scope, in: lines)
            result.keyLines[key] = keyLine
            let place = "\(path):\(keyLine): \(key) of [tenant.\(name)]"
            switch key {
            case "tracking-host", "marketing-host":
                guard let text = value.string else { throw ConfigurationFile.Failure(description: "\(place) takes a URL string") }
                do {
                    let host = try CampaignHost(parsing: text, role: key)
                    if key == "tracking-host" { result.trackingHost = host } else { result.marketingHost = host }
                } catch {
                    throw ConfigurationFile.Failure(description: "\(place): \(error.description)")
                }
            case "ca-file":
                guard let text = value.string, !text.isEmpty else { throw ConfigurationFile.Failure(description: "\(place) takes a file path") }
                guard FileManager.default.isReadableFile(atPath: text) else {
                    throw ConfigurationFile.Failure(description: "\(place): no readable file at \(text); give a PEM file of CA certificates")
                }
                result.caFile = text
            case "integration-key":
                let keys = value.array.map { array in array.compactMap(\.string) } ?? value.string.map { [$0] }
                guard let keys, keys.count == (value.array?.count ?? 1), keys.allSatisfy({ !$0.isEmpty }) else {
                    throw ConfigurationFile.Failure(description: "\(place) takes a list of non-empty strings")
                }
                if let repeated = Dictionary(grouping: keys, by: { $0 }).first(where: { $0.value.count > 1 })?.key {
                    throw ConfigurationFile.Failure(description: "\(place): \(JSONText.quoted(repeated)) is listed twice")
                }
                result.integrationKeys = keys
            case "max-wal-bytes":
                guard let bytes = value.int, bytes > 0 else {
                    throw ConfigurationFile.Failure(description: "\(place) takes a positive number of bytes")
                }
                result.maximumLogBytes = Int64(bytes)
            case "admin-token":
                guard let text = value.string else { throw ConfigurationFile.Failure(description: "\(place) takes a string") }
                guard text.count >= 16 else { throw ConfigurationFile.Failure(description: "\(place) must be at least 16 characters") }
                result.adminToken = text
            default:
                throw ConfigurationFile.Failure(
                    description: "\(place): a tenant takes \(keys.keys.sorted().joined(separator: ", "))\(suggestion(key))")
            }
        }
        return result
    }

    /// "; did you mean …?" for a key close to one a tenant takes, else nothing.
    private static func suggestion(_ key: String) -> String {
        let closest = keys.keys.min { ConfigurationFile.distance(key, $0) < ConfigurationFile.distance(key, $1) }
        guard let closest, ConfigurationFile.distance(key, closest) <= max(2, key.count / 3) else { return "" }
        return "; did you mean \(closest)?"
    }

    /// Checks the tenants against what the default tenant forwards: where `serve` forwards the
    /// default tenant's hits or registrations to a Campaign host, each tenant needs its own host of
    /// that kind (or its events would be stored and never sent); a relay that hands every event to
    /// a central relay (`upstream-relay`) forwards no tenant to Campaign itself, so its tenants
    /// name no hosts. `adminToken` is the relay's own, which no tenant may share.
    ///
    /// - Throws: ``ConfigurationFile/Failure`` naming the file, the tenant's line and the key.
    static func check(
        _ tenants: [TenantTable], path: String, forwardsTracking: Bool, forwardsMarketing: Bool, handsOnToRelay: Bool, adminToken: String?,
        maximumLogBytes: Int64?
    ) throws(ConfigurationFile.Failure) {
        for tenant in tenants {
            if let share = tenant.maximumLogBytes, let limit = maximumLogBytes, share > limit {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(tenant.keyLines["max-wal-bytes"] ?? tenant.line): max-wal-bytes of \(tenant.header) is \(share), above the relay's max-wal-bytes \(limit), which limits every tenant together: give the tenant a smaller share"
                )
            }
            if tenant.maximumLogBytes != nil, !handsOnToRelay, tenant.trackingHost == nil, tenant.marketingHost == nil {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(tenant.keyLines["max-wal-bytes"] ?? tenant.line): max-wal-bytes of \(tenant.header) limits what its hosts have not taken, and it has no tracking-host or marketing-host: give it hosts, or leave the share out"
                )
            }
            if handsOnToRelay {
                for key in ["tracking-host", "marketing-host", "ca-file"] where tenant.keyLines[key] != nil {
                    throw ConfigurationFile.Failure(
                        description:
                            "\(path):\(tenant.keyLines[key] ?? tenant.line): \(key) of \(tenant.header): this relay hands every event to its upstream-relay, which forwards each tenant to that tenant's hosts: declare the hosts there, not here"
                    )
                }
                continue
            }
            if forwardsTracking, tenant.trackingHost == nil {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(tenant.line): \(tenant.header) has no tracking-host, but serve forwards the default tenant's tracking hits (tracking-host): give the tenant its own, or its hits would never be sent"
                )
            }
            if forwardsMarketing, tenant.marketingHost == nil {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(tenant.line): \(tenant.header) has no marketing-host, but serve forwards the default tenant's registrations (marketing-host): give the tenant its own, or its registrations would never be sent"
                )
            }
            if let adminToken, tenant.adminToken == adminToken {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(tenant.keyLines["admin-token"] ?? tenant.line): admin-token of \(tenant.header) is the relay's own admin-token, which sees every tenant: give the tenant a token of its own"
                )
            }
        }
    }

    /// The tenant as `serve` runs it.
    var configuration: TenantConfiguration {
        TenantConfiguration(
            destinations: TenantDestinations(
                tenant: name, trackingHost: trackingHost, marketingHost: marketingHost, trustedCertificateAuthorities: caFile),
            integrationKeys: Set(integrationKeys), adminToken: adminToken, maximumLogBytes: maximumLogBytes)
    }
}

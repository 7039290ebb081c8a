import Foundation
import RelayCore
import RelayForwarding
import RelayServer
import TOMLKit

/// One `[tenant.NAME]` table of a configuration file: a tenant's own Campaign hosts, CA file,
/// integration keys, admin token and log share (README, "Tenants"; `docs/configuration.md`).
///
/// Read by ``ConfigurationFile`` with the rest of the file, so `config check` reports a mistake
/// here as it reports any other: the file, the line and the key. Each key is read by its
/// ``TenantKey`` (the one table of tenant keys, ``TenantKey/all``); this type holds what the keys
/// read, and the rules between them and the relay's own settings (`check`).
struct TenantTable: Sendable, Hashable {
    /// The tenant.
    var name: TenantName
    /// The tenant as `serve` runs it, as its keys set it.
    var configuration: TenantConfiguration
    /// Each key it sets, as `config check` shows it, by key.
    var shown: [String: TenantKey.Shown]
    /// The line of its `[tenant.NAME]` header.
    var line: Int
    /// The line of each key it sets.
    var keyLines: [String: Int]

    /// The table's name as its header writes it.
    var header: String { "[tenant.\(name.text)]" }

    /// The integration keys its SDK endpoints take; empty: any.
    var integrationKeys: Set<String> { configuration.integrationKeys }

    /// Reads the tables under `tenant` of the file at `path` (whose text is `lines`), each key
    /// with its reader among `keys` (the table of tenant keys; a test may add one).
    ///
    /// - Throws: ``ConfigurationFile/Failure`` naming the file, the line and the key: a name that
    ///   breaks the rules of names, a key a tenant does not take, a value of the wrong type, an
    ///   unusable host, a repeated integration key, a short admin token or one two tenants share.
    static func tables(
        _ value: any TOMLValueConvertible, path: String, lines: [String], keys: [TenantKey] = TenantKey.all
    ) throws(ConfigurationFile.Failure) -> [TenantTable] {
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
            tables.append(try tenantTable(name: name, table, line: line, path: path, lines: lines, keys: keys))
        }
        var owners: [String: String] = [:]
        for table in tables {
            guard let token = table.configuration.adminToken else { continue }
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

    private static func tenantTable(
        name: String, _ table: TOMLTable, line: Int, path: String, lines: [String], keys: [TenantKey]
    ) throws(ConfigurationFile.Failure) -> TenantTable {
        let tenant: TenantName
        do {
            tenant = try TenantName(validating: name)
        } catch {
            throw ConfigurationFile.Failure(description: "\(path):\(line): [tenant.\(name)]: the name \(error.message.dropFirst("tenant ".count))")
        }
        var result = TenantTable(
            name: tenant,
            configuration: TenantConfiguration(destinations: TenantDestinations(tenant: tenant, trackingHost: nil, marketingHost: nil)),
            shown: [:], line: line, keyLines: [:])
        let scope = "tenant.\(name)"
        for key in table.keys.sorted() {
            guard let value = table[key] else { continue }
            let keyLine = ConfigurationFile.line(ofKey: key, table: scope, in: lines)
            result.keyLines[key] = keyLine
            let place = "\(path):\(keyLine): \(key) of [tenant.\(name)]"
            guard let tenantKey = keys.first(where: { $0.name == key }) else {
                let names = keys.map(\.name)
                throw ConfigurationFile.Failure(
                    description: "\(place): a tenant takes \(names.sorted().joined(separator: ", "))\(suggestion(key, among: names))")
            }
            result.shown[key] = try tenantKey.read(value, place, &result.configuration)
        }
        return result
    }

    /// Fails unless a file is readable at `path` (a tenant's `ca-file`). Checked while the
    /// configuration is read (on the thread reading it), so a mistake names its line before
    /// anything starts.
    ///
    /// - Throws: ``ConfigurationFile/Failure`` starting with `place` (`FILE:LINE: KEY of [tenant.NAME]`).
    static func requireReadable(_ path: String, place: String) throws(ConfigurationFile.Failure) {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ConfigurationFile.Failure(description: "\(place): no readable file at \(path); give a PEM file of CA certificates")
        }
    }

    /// "; did you mean …?" for a key close to one a tenant takes, else nothing.
    private static func suggestion(_ key: String, among names: [String]) -> String {
        let closest = names.min { ConfigurationFile.distance(key, $0) < ConfigurationFile.distance(key, $1) }
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
            let (trackingHost, marketingHost) = (tenant.configuration.destinations.trackingHost, tenant.configuration.destinations.marketingHost)
            if let share = tenant.configuration.logShareBytes, let limit = maximumLogBytes, share > limit {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(tenant.keyLines["max-wal-bytes"] ?? tenant.line): max-wal-bytes of \(tenant.header) is \(share), above the relay's max-wal-bytes \(limit), which limits every tenant together: give the tenant a smaller share"
                )
            }
            if tenant.configuration.logShareBytes != nil, !handsOnToRelay, trackingHost == nil, marketingHost == nil {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(tenant.keyLines["max-wal-bytes"] ?? tenant.line): max-wal-bytes of \(tenant.header) limits what its hosts have not taken, and it has no tracking-host or marketing-host: give it hosts, or leave the share out"
                )
            }
            if handsOnToRelay {
                for key in ["tracking-host", "marketing-host", "ca-file", "max-rate"] where tenant.keyLines[key] != nil {
                    throw ConfigurationFile.Failure(
                        description:
                            "\(path):\(tenant.keyLines[key] ?? tenant.line): \(key) of \(tenant.header): this relay hands every event to its upstream-relay, which forwards each tenant to that tenant's hosts: declare the hosts (and their ca-file and max-rate) there, not here"
                    )
                }
                continue
            }
            if forwardsTracking, trackingHost == nil {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(tenant.line): \(tenant.header) has no tracking-host, but serve forwards the default tenant's tracking hits (tracking-host): give the tenant its own, or its hits would never be sent"
                )
            }
            if forwardsMarketing, marketingHost == nil {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(tenant.line): \(tenant.header) has no marketing-host, but serve forwards the default tenant's registrations (marketing-host): give the tenant its own, or its registrations would never be sent"
                )
            }
            if let adminToken, tenant.configuration.adminToken == adminToken {
                throw ConfigurationFile.Failure(
                    description:
                        "\(path):\(tenant.keyLines["admin-token"] ?? tenant.line): admin-token of \(tenant.header) is the relay's own admin-token, which sees every tenant: give the tenant a token of its own"
                )
            }
        }
    }
}

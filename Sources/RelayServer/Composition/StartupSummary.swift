import Logging
import RelayLog

/// What `serve` logs as it starts, one line per thing configured, so that an operator reading the
/// first lines of its log knows what this relay does without reading its flags: where it keeps
/// its log and whether it is encrypted, where each tenant's events go, where it counts, how long
/// it keeps what it forwarded and where it archives. (The listen address is logged once the
/// listener is up: `campaign-relay listening`.)
struct StartupSummary {
    /// One line: the message and its metadata.
    struct Line: Equatable {
        var message: String
        var metadata: [String: String]
    }

    /// The lines of `configuration`, in the order they are logged.
    static func lines(of configuration: RelayServerConfiguration) -> [Line] {
        var lines: [Line] = []
        let log = configuration.log
        if let keys = log.encryption {
            lines.append(Line(message: "encryption at rest on: new frames are sealed with the newest key", metadata: ["key-id": keys.newest.id]))
        } else {
            lines.append(Line(message: "encryption at rest off: the log holds events in the clear", metadata: [:]))
        }
        lines += destinations(of: configuration)
        if configuration.logPostgres != nil, let postgres = configuration.postgres {
            // The log in PostgreSQL: every count goes to the fleet's tables, none to this disk.
            lines.append(Line(message: "counting into the fleet's PostgreSQL (the log is in PostgreSQL)", metadata: ["database": "\(postgres)"]))
        } else {
            if configuration.aggregates {
                lines.append(Line(message: "counting per delivery into aggregates.sqlite", metadata: ["data-dir": configuration.dataDirectory]))
            } else {
                lines.append(Line(message: "not counting (--no-aggregates): `campaign-relay aggregate` can catch up later", metadata: [:]))
            }
            if let postgres = configuration.postgres {
                lines.append(Line(message: "counting into the fleet's PostgreSQL too", metadata: ["database": "\(postgres)"]))
            }
        }
        var retention = [
            "retain": text(log.retention.age), "retain-bytes": log.retention.bytes.map(text(bytes:)) ?? "unlimited",
        ]
        if configuration.logPostgres != nil {
            lines.append(Line(message: "keeping forwarded spans of the log's PostgreSQL stream, then deleting them", metadata: retention))
        } else if let archive = log.archiveDirectory {
            retention["archive"] = archive
            lines.append(Line(message: "keeping forwarded segments, then archiving them", metadata: retention))
        } else {
            lines.append(Line(message: "keeping forwarded segments, then deleting them (no --archive-dir)", metadata: retention))
        }
        return lines
    }

    /// Where each tenant's events go: the default tenant's, each declared tenant's, or a central relay.
    private static func destinations(of configuration: RelayServerConfiguration) -> [Line] {
        if let central = configuration.upstreamRelay {
            return [Line(message: "handing every event, of every tenant, to a central relay", metadata: ["upstream-relay": central.description])]
        }
        var lines: [Line] = []
        let hosts = { (tracking: String?, marketing: String?) -> [String: String] in
            ["tracking-host": tracking ?? "none", "marketing-host": marketing ?? "none"]
        }
        if configuration.trackingHost != nil || configuration.marketingHost != nil {
            lines.append(
                Line(
                    message: "forwarding the default tenant's events",
                    metadata: hosts(configuration.trackingHost?.description, configuration.marketingHost?.description)))
        } else {
            lines.append(
                Line(
                    message: "not forwarding the default tenant's events: no --tracking-host or --marketing-host; they are stored and counted",
                    metadata: [:]))
        }
        for tenant in configuration.tenants {
            let destinations = tenant.destinations
            var metadata = hosts(destinations.trackingHost?.description, destinations.marketingHost?.description)
            metadata["tenant"] = destinations.tenant.text
            lines.append(Line(message: "forwarding a tenant's events", metadata: metadata))
        }
        return lines
    }

    /// Logs `configuration`'s lines at notice level.
    static func log(_ configuration: RelayServerConfiguration, to logger: Logger) {
        for line in lines(of: configuration) {
            logger.notice("\(line.message)", metadata: line.metadata.mapValues { .string($0) })
        }
    }

    /// `86400 s` as `24h`, `90 s` as `90s`: the units `--retain` takes.
    static func text(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        if seconds == 0 { return "0" }
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where seconds % size == 0 && seconds >= size {
            // Whole days only past a day: 24h reads better as 24h than 1d, as the default is written.
            if unit == "d", seconds <= 86_400 { continue }
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
    }

    /// Bytes in the largest binary unit that holds them whole (`10GiB`), as `--retain-bytes` takes.
    static func text(bytes: Int64) -> String {
        for (unit, shift) in [("TiB", Int64(40)), ("GiB", 30), ("MiB", 20), ("KiB", 10)] where bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return "\(bytes >> shift)\(unit)"
        }
        return "\(bytes)"
    }
}

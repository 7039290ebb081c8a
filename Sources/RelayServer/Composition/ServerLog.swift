import Logging
import RelayAggregator
import RelayIO
import RelayLog
import RelayPostgres

/// The log `serve` runs on: segment files under the data directory (the default), or a stream
/// of the log database (`--log-postgres-url`) with this relay's leases on it.
struct ServerLog {
    let log: WriteAheadLog
    /// The leases of this relay's stream and those it adopts; `nil` on the file log.
    let leases: StreamLeases?
    /// How many copies an acknowledgement means.
    let durability: LogDurability

    /// Opens the log `configuration` names with every consumer it declares.
    ///
    /// - Throws: the log's ``LogError``.
    static func open(configuration: RelayServerConfiguration, fileSystem: any FileSystem, logger: Logger) async throws -> ServerLog {
        guard let settings = configuration.logPostgres else {
            let log = try await WriteAheadLog.open(
                dataDirectory: configuration.dataDirectory, configuration: configuration.logWithWrittenEventsKept,
                consumers: configuration.logConsumers, fileSystem: fileSystem, logger: logger)
            return ServerLog(log: log, leases: nil, durability: LogDurability(.files))
        }
        let directory = configuration.dataDirectory
        // The data directory's relay id names the stream unless --relay-name does; a new stream
        // takes it as its relay id (the origin its events carry to a central relay).
        let identity = try await BlockingExecutor(name: "identity").run { () throws(LogError) in
            try RelayIdentity.establish(dataDirectory: directory, fileSystem: fileSystem)
        }
        let stream = settings.relayName ?? identity.relayID
        let durability = LogDurability(LogDurability.Reading(store: "postgresql", copies: 1))
        let leases = StreamLeases(location: settings.location, stream: stream, lease: settings.lease, durability: durability, logger: logger)
        let opened = try await PostgresLog.open(
            location: settings.location, stream: stream, newRelayID: identity.relayID, configuration: configuration.logWithWrittenEventsKept,
            consumers: configuration.logConsumers, fenced: Set(configuration.sinkLists.consumers.map(\.name)), fence: leases.fence,
            readOnly: false, walDirectory: LogLayout(dataDirectory: directory).walDirectory,
            erasurePlans: PostgresLogErasure.planDirectory(dataDirectory: directory), logger: logger)
        await leases.setWriter(opened.writer)
        // The first round before anything is served: the heartbeat, this stream's lease, and the
        // copies an acknowledgement means, which the start says.
        await leases.round()
        let reading = durability.current
        let metadata: Logger.Metadata = [
            "stream": "\(stream)", "relay-id": "\(opened.log.identity.relayID)", "database": "\(settings.location)",
            "next-sequence": "\(await opened.log.durableSequence)", "copies": "\(reading.copies)",
            "synchronous-standbys": "\((reading.synchronousStandbys ?? []).joined(separator: ","))",
        ]
        if let problem = reading.lastError { logger.warning("\(problem)", metadata: ["stream": "\(stream)"]) }
        if reading.copies < 2 {
            logger.warning(
                "the log is in PostgreSQL with no synchronous standby streaming: an acknowledgement is on 1 copy (set synchronous_standby_names, see docs/high-availability.md)",
                metadata: metadata)
        } else {
            logger.notice("the log is in PostgreSQL: an acknowledgement is on \(reading.copiesText)", metadata: metadata)
        }
        return ServerLog(log: opened.log, leases: leases, durability: durability)
    }
}

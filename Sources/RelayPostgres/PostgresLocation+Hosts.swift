public import Logging
public import PostgresNIO

extension PostgresLocation {
    /// Connects to the first host of the URL that answers and, when ``requiresWritable``, is a
    /// writable primary (`pg_is_in_recovery()` is false): libpq's `target_session_attrs=read-write`.
    /// After a failover, the next connection finds the promoted standby this way.
    ///
    /// - Throws: ``FleetError/database(_:)`` naming each host and why it would not do.
    public func connectWritable(logger: Logger) async throws -> PostgresConnection {
        var reasons: [String] = []
        for (index, configuration) in hostConfigurations.enumerated() {
            let name = "\(configuration.host ?? "?"):\(configuration.port ?? 5432)"
            let connection: PostgresConnection
            do {
                connection = try await PostgresConnection.connect(configuration: configuration, id: index + 1, logger: logger)
            } catch {
                reasons.append("\(name): \(FleetError.reason(error))")
                continue
            }
            guard requiresWritable else { return connection }
            do {
                var inRecovery = true
                for try await recovering in try await connection.query("SELECT pg_is_in_recovery()", logger: logger).decode(Bool.self) {
                    inRecovery = recovering
                }
                if !inRecovery { return connection }
                reasons.append("\(name): a standby (in recovery), not a writable primary")
            } catch {
                reasons.append("\(name): \(FleetError.reason(error))")
            }
            try? await connection.close()
        }
        let wanted = requiresWritable ? "a writable primary" : "a server"
        throw FleetError.database("cannot connect to \(wanted) at \(self): \(reasons.joined(separator: "; "))")
    }
}

extension PostgresLocation {
    /// A logger that drops PostgresNIO's own records: the relay logs what a failure means itself.
    var quietLogger: Logger { Logger(label: "campaign-relay.postgres", factory: { _ in SwiftLogNoOpLogHandler() }) }
}

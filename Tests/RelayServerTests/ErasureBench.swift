import Foundation
import RelayCore
import RelayPrivacy
import RelaySQLite
import RelayServer
import RelayTestSupport

@testable import RelayForwarding
@testable import RelayLog

/// A data directory on the real file system with its log (frames stored uncompressed, so a byte
/// of a registration left in a segment shows) and forwarding store open, for erasures run in the
/// test's process (``PersonalDataErasure``) as `erase` runs them: no aggregator, no aggregates
/// database.
struct ErasureBench {
    let directory: String
    let log: WriteAheadLog
    let store: ForwardingStore

    var walDirectory: String { LogLayout(dataDirectory: directory).walDirectory }

    /// A new data directory labelled `label`, its log and store open; `beforeOpening` runs on the
    /// empty directory first (a `pseudonym.key` written there, say).
    static func open(_ label: String, beforeOpening: (String) throws -> Void = { _ in }) async throws -> ErasureBench {
        let directory = temporaryDirectory(label)
        try beforeOpening(directory)
        var configuration = LogConfiguration(compressionLevel: 0)
        configuration.retention = .keepingEverything
        let log = try await WriteAheadLog.open(dataDirectory: directory, configuration: configuration, logger: quietLogger)
        let store = try await ForwardingStore(dataDirectory: directory)
        return ErasureBench(directory: directory, log: log, store: store)
    }

    /// An erasure of this directory, counting into a fleet through `fleet` when given.
    func erasure(fleet: PersonalDataErasure.FleetStep? = nil) -> PersonalDataErasure {
        PersonalDataErasure(
            log: log, dataDirectory: directory, archiveDirectories: [], store: store, aggregator: nil, fleet: fleet, logger: quietLogger)
    }

    /// Appends `registrations` and returns their sequence numbers, in order.
    @discardableResult
    func append(_ registrations: [Registration]) async throws -> [UInt64] {
        Array(try await log.append(registrations.map(Event.registration)))
    }

    /// The log's events as its segments hold them, without the mask of any plan.
    func stored() throws -> [UInt64: Event] {
        var reader = LogReader(
            walDirectory: walDirectory, archiveDirectory: nil, fileSystem: PosixFileSystem(), from: 1, keys: nil, sharedDecoder: nil,
            damageLogger: nil, erasures: ErasureMask())
        defer { reader.close() }
        var events: [UInt64: Event] = [:]
        while true {
            let batch = try reader.read(maximumEvents: 1000)
            if batch.events.isEmpty { break }
            for event in batch.events { events[event.sequence] = event.event }
        }
        return events
    }

    /// The bytes of every segment file, by name.
    func segments() throws -> [String: [UInt8]] {
        let fileSystem = PosixFileSystem()
        var files: [String: [UInt8]] = [:]
        for name in try fileSystem.listDirectory(walDirectory) where name.hasSuffix(".wal") {
            files[name] = try fileSystem.readFile("\(walDirectory)/\(name)")
        }
        return files
    }

    /// The plans of unfinished erasures in `wal/`.
    func plans() throws -> [ErasurePlan] { try ErasurePlan.pending(walDirectory: walDirectory) }

    /// Closes the log and removes the directory.
    func close() async {
        await log.close()
        removeTree(directory)
    }

    /// A registration of Ada's (user key `pdcanaryadauser`, her canaries in her fields).
    static func ada(_ token: String, tenant: String? = nil, app: String = "app1", platform: Platform = .android) throws -> Registration {
        try registration(token, user: "pdcanaryadauser", tenant: tenant, app: app, platform: platform)
    }

    /// A registration of `user` on the device `token`.
    static func registration(_ token: String, user: String, tenant: String? = nil, app: String = "app1", platform: Platform = .android) throws
        -> Registration
    {
        var registration = Registration(
            platform: platform, integrationKey: app, registrationToken: token, userKey: user, deviceName: "\(user) device",
            time: try EventTime(rfc3339: "2026-11-26T10:00:00.250Z", field: "time"))
        registration.tenant = try tenant.map { try TenantName(validating: $0) }
        return registration
    }
}

extension ForwardingStore {
    /// Runs `sql` on the store's own connection, on its thread, and returns the first column of
    /// its first row, if any: a test's way to set a pragma the store's connection then has.
    func pragmaForTest(_ sql: String) throws(SQLiteError) -> Int64? {
        let statement = try connection.prepare(sql)
        defer { statement.finalize() }
        return try statement.step() ? statement.int64(0) : nil
    }
}

/// Why a fleet step of a test fails: PostgreSQL does not answer.
struct FleetDown: Error, CustomStringConvertible {
    var description: String { "connection refused (the test's PostgreSQL is down)" }
}

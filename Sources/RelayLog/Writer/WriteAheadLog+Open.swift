public import Logging
public import RelayCore

extension WriteAheadLog {
    /// Opens (creating if needed) the log under `dataDirectory`, recovering from any earlier crash,
    /// and declares its `consumers`: each gets its cursor (at the oldest event kept, when it has
    /// none yet) before the log is returned, so retention knows every one of them before anything
    /// appends or moves a cursor.
    ///
    /// - Throws: ``LogError/locked(path:)`` when another process has it open,
    ///   ``LogError/invalidCursorName(_:)`` for a consumer's name, or
    ///   ``LogError/fileSystem(_:context:)`` when the directory cannot be read or repaired.
    public static func open(
        dataDirectory: String, configuration: LogConfiguration = LogConfiguration(), consumers: [LogConsumerDeclaration] = [],
        fileSystem: any FileSystem = PosixFileSystem(), logger: Logger = Logger(label: "campaign-relay.wal"),
        wallClock: @escaping @Sendable () -> Int64 = SystemClock.wallNanoseconds
    ) async throws(LogError) -> WriteAheadLog {
        let layout = LogLayout(dataDirectory: dataDirectory)
        let opened = try await SegmentFileStore.open(
            layout: layout, configuration: configuration, fileSystem: fileSystem, logger: logger,
            // Decoded frames are kept for a log that several consumers read (one alone never reads a
            // frame twice), and written ones for consumers at its end, when configured.
            decodedEventsKept: max(configuration.writtenEventsKept, consumers.count > 1 ? SharedFrameDecoder.defaultCapacity : 0),
            wallClock: wallClock)
        return try await open(
            opened, walDirectory: layout.walDirectory, configuration: configuration, consumers: consumers, fileSystem: fileSystem, logger: logger,
            wallClock: wallClock)
    }

    /// Opens the log over a store already opened (``OpenedFrameStore``): a store of another kind
    /// than segment files (PostgreSQL's) opens itself, then hands the log what it found here.
    /// `walDirectory` is where the log's files would be (erasure plans, the archive's neighbours);
    /// a store that keeps none names a directory nothing reads.
    ///
    /// - Throws: ``LogError/invalidCursorName(_:)`` for a consumer's name.
    package static func open(
        _ opened: OpenedFrameStore, walDirectory: String, configuration: LogConfiguration, consumers: [LogConsumerDeclaration],
        fileSystem: any FileSystem = PosixFileSystem(), logger: Logger, wallClock: @escaping @Sendable () -> Int64 = SystemClock.wallNanoseconds
    ) async throws(LogError) -> WriteAheadLog {
        logOpening(opened, logger: logger)
        let log = WriteAheadLog(
            opened: opened, walDirectory: walDirectory, configuration: configuration, fileSystem: fileSystem, logger: logger, wallClock: wallClock)
        await log.startFlushLoop()
        do {
            for consumer in consumers { try await log.declare(consumer) }
        } catch {
            await log.close()
            throw error
        }
        await log.startTenantReadBack(for: Set(configuration.tenantLogShares.keys))
        return log
    }

    /// Logs what opening found: an unfinished erasure, a new relay or epoch, damage, a torn tail.
    private static func logOpening(_ opened: OpenedFrameStore, logger: Logger) {
        let (report, identity) = (opened.report, opened.identity)
        if !opened.erasures.isEmpty {
            logger.notice("an erasure was cut short; its registrations are masked until it is finished (serve and erase finish it)")
        }
        switch opened.change {
        case .unchanged:
            break
        case .created:
            logger.notice("this data directory is a new relay", metadata: ["relay-id": "\(identity.relayID)", "epoch": "\(identity.epoch.number)"])
        case .newEpoch:
            logger.warning(
                "this data directory is a copy (restored or cloned): a new epoch begins, so a central relay cannot take its new events for the original's",
                metadata: [
                    "relay-id": "\(identity.relayID)", "epoch": "\(identity.epoch.number)", "first-sequence": "\(identity.epoch.firstSequence)",
                    "reason": "\(identity.epoch.reason)",
                ]
            )
        case .recreated(let reason):
            logger.error(
                "the relay identity file was unreadable (kept in quarantine); this directory is now a new relay to any central relay",
                metadata: ["relay-id": "\(identity.relayID)", "reason": "\(reason)"]
            )
        }
        for damage in report.damage {
            logger.warning("log damage found on open; bytes kept in quarantine", metadata: ["damage": "\(damage)"])
        }
        if report.truncatedBytes > 0 {
            logger.notice("cut a torn tail left by an interrupted write", metadata: ["bytes": "\(report.truncatedBytes)"])
        }
    }
}

public import Logging
public import RelayAggregates
public import RelayAggregator
public import RelayCore
public import RelayForwarding
import RelayIO
public import RelayLog
public import RelayPostgres

/// Erases a person's registrations from everything the relay keeps: the log and its archives,
/// the dead letters, the uploader's deduplication state, and the aggregates (their counts and
/// distinct-token state). Tracking hits carry no personal data and stay; everyone else's events
/// keep their sequence numbers and bytes.
///
/// An erasure runs in steps, each safe to repeat:
/// 1. It seals the segment being appended to, so that every registration before the request is in
///    a segment no commit writes to again, finds them there and in the archives (below that
///    boundary), and finds the dead letters that hold them.
/// 2. It writes its ``ErasurePlan`` (no personal data) durably. From here on it is finished
///    whatever happens: a restart (``finishPending()``, which `serve` and `erase` call first)
///    carries on from the plan, and every reader masks the planned registrations meanwhile.
/// 3. It masks them in this process's readers and lanes, waits for the answers to requests
///    carrying them that were already on the wire, and, between two transactions of the
///    aggregator, takes them out of the aggregates.
/// 4. It deletes the dead letters and deduplication rows.
/// 5. It rewrites the segments holding them, in the log and each archive (``LogErasure``).
/// 6. It appends its record to the audit log (``ErasureAuditLog``) and removes its plan.
///
/// One erasure runs at a time (an actor).
public actor PersonalDataErasure {
    /// The open log: the server's own, or one `erase` opened (then no server runs).
    let log: WriteAheadLog
    let dataDirectory: String
    /// The log's directory (`<data-dir>/wal`), whose segments a file log's erasure rewrites.
    let walDirectory: String
    /// Where plans are kept: beside the segments (``RelayLog/ErasurePlanFiles``, under their
    /// rewrite lock), or beside the stream in PostgreSQL (``RelayPostgres/PostgresErasurePlans``).
    let plans: any ErasurePlanStore
    let archiveDirectories: [String]
    /// The log's stream in PostgreSQL, when the log is kept there (`--log-postgres-url`): its rows
    /// are found and rewritten instead of segment files, and the plans are kept beside them.
    let stream: PostgresLogErasure?
    let store: ForwardingStore
    /// The server's running aggregator; `nil` when none runs (the database, if any, is changed directly).
    let aggregator: Aggregator?
    /// Changes the fleet's PostgreSQL (``FleetErasure``) for the targets, with the fleet aggregator
    /// between two transactions; `nil` when the relay counts into no fleet.
    let fleet: FleetStep?
    /// The file system of the log's directories and the audit log (the SQLite stores use their own).
    let fileSystem: any FileSystem
    /// The kinds of sink whose lanes may have sent a registration on: the lane of each that carries
    /// registrations, for the registration's tenant, says whether it was forwarded (a kind that
    /// delivers) or handed on (a kind that hands events on).
    let sinkKinds: [SinkKind]
    /// The metrics the relay counts: what an erasure takes a registration out of when no
    /// aggregator runs (the running one counts with its own).
    let metrics: MetricTable

    /// The fleet step of a process where no fleet aggregator of this relay runs (`erase` without a
    /// server, `serve` before its services start): ``FleetErasure`` in a session of its own, over
    /// the metrics of `table` (the table the relay counts with).
    public static func directFleetStep(location: PostgresLocation, relayID: String, table: MetricTable = .standard, logger: Logger) -> FleetStep {
        { targets in
            try await location.connectedSession(logger: logger) { connection, watch in
                try await FleetSchema.migrate(connection, logger: logger)
                watch.begin()
                defer { watch.end() }
                return try await FleetErasure.apply(targets, relayID: relayID, table: table, connection: connection, logger: logger)
            }
        }
    }

    /// See ``fleet``.
    public typealias FleetStep = @Sendable ([ErasurePlan.Target]) async throws -> FleetErasure.Result
    let logger: Logger
    private let io = BlockingExecutor(name: "erasure")
    /// One erasure (or finishing of unfinished ones) at a time: the actor lets another request in
    /// at each `await`, and two erasures must not interleave their steps.
    private let turns = TurnQueue()
    /// Set by ``close()``: the log is no longer this erasure's to change.
    private var closed = false

    /// An erasure of the registrations in `log` (of `dataDirectory`), the archives, `store`'s dead
    /// letters and deduplication state, and the aggregates: through the running `aggregator`, or
    /// the database directly when there is none. The segments, plans and audit log are read and
    /// written through `fileSystem` (the log's). What was sent on is read from the cursors of the
    /// lanes of `sinkKinds` (the relay's own kinds by default; `serve` passes its configuration's).
    /// With `stream`, the log's frames are the rows of that stream in PostgreSQL.
    public init(
        log: WriteAheadLog, dataDirectory: String, archiveDirectories: [String], stream: PostgresLogErasure? = nil, store: ForwardingStore,
        aggregator: Aggregator?,
        fleet: FleetStep? = nil, fileSystem: any FileSystem = PosixFileSystem(), sinkKinds: [SinkKind] = SinkKind.builtIn,
        metrics: MetricTable = .standard, logger: Logger
    ) {
        self.fleet = fleet
        self.metrics = metrics
        self.sinkKinds = sinkKinds.filter(\.carriesRegistrations)
        self.fileSystem = fileSystem
        self.log = log
        self.dataDirectory = dataDirectory
        self.walDirectory = LogLayout(dataDirectory: dataDirectory).walDirectory
        self.plans = stream?.plans ?? ErasurePlanFiles(directory: walDirectory, fileSystem: fileSystem)
        self.archiveDirectories = archiveDirectories
        self.stream = stream
        self.store = store
        self.aggregator = aggregator
        self.logger = logger
    }

    /// Erases the registrations `selector` matches (with `dryRun`, only counts them) and returns
    /// what was done. Unfinished erasures are finished first.
    ///
    /// - Throws: ``ErasureError``; once the plan is written, what was done stays done and the next
    ///   start finishes the rest.
    public func erase(_ selector: ErasureSelector, dryRun: Bool) async throws(ErasureError) -> ErasureReport {
        await turns.take()
        defer { turns.end() }
        try refuseWhenClosed()
        _ = try await finishPlans()
        let requested = EventTime.now()
        // A dry run only reads: it looks at what is durable now, and leaves the segments as they are.
        let boundary = dryRun ? await log.durableSequence : await log.sealActiveSegment()
        let keys = log.configuration.encryption
        let walDirectory = walDirectory
        let directories = [walDirectory] + archiveDirectories
        let fileSystem = fileSystem
        let stream = stream
        // Each directory's matches are counted too: a dry run reports them as the entries it
        // would erase there (an archive holds copies of the log's registrations).
        let (matches, perDirectory) = try await io.run { () throws(ErasureError) -> ([LogErasure.Match], [LogErasure.Rewrite]) in
            if let stream {
                do throws(LogError) {
                    let found = try stream.find(selector, below: boundary, keys: keys)
                    var counted = LogErasure.Rewrite(directory: stream.place)
                    counted.entriesErased = found.count
                    return (found, [counted])
                } catch {
                    throw .log(error)
                }
            }
            var found: [UInt64: LogErasure.Match] = [:]
            var perDirectory: [LogErasure.Rewrite] = []
            for directory in directories {
                do throws(LogError) {
                    var counted = LogErasure.Rewrite(directory: directory)
                    for match in try LogErasure.find(selector, in: directory, below: boundary, keys: keys, fileSystem: fileSystem) {
                        found[match.sequence] = match
                        counted.entriesErased += 1
                    }
                    perDirectory.append(counted)
                } catch {
                    throw .log(error)
                }
            }
            return (found.values.sorted { $0.sequence < $1.sequence }, perDirectory)
        }
        let digests = Set(matches.map { TokenDigest.hex($0.registration.registrationToken) })
        let findings: ForwardingStore.ErasureFindings
        let pseudonymizer: Pseudonymizer
        do {
            findings = try await store.erasureFindings(selector, tokenDigests: digests)
            pseudonymizer = try await store.pseudonymizer()
        } catch {
            throw .forwarding("\(error)")
        }
        var targets: [ErasurePlan.Target] = []
        for match in matches {
            let registration = match.registration
            var forwarded = false
            var handedOn = false
            for kind in sinkKinds {
                let passed = await log.cursorPosition(kind.cursorName(of: registration.tenant)).map { match.sequence < $0 } ?? false
                switch kind.role {
                // Passed by a delivering lane (the marketing host's) and not a dead letter: it took it.
                case .delivers: forwarded = forwarded || (passed && !findings.deadLetteredSequences.contains(match.sequence))
                case .handsOn: handedOn = handedOn || passed
                }
            }
            var target =
                ErasurePlan.Target(
                    sequence: match.sequence, tenant: registration.tenant.storedName, integrationKey: registration.integrationKey,
                    platform: registration.platform.rawValue, tokenDigest: TokenDigest.hex(registration.registrationToken),
                    timeNanoseconds: registration.time.nanosecondsSinceEpoch, originRelayId: registration.chain?.first.relayID,
                    viaRelayId: registration.chain?.hop?.relayID, forwarded: forwarded, handedOn: handedOn)
            target.isCopy = registration.origin != nil
            targets.append(target)
        }
        var plan = ErasurePlan(
            id: ErasurePlan.newID(at: requested), requestedAt: requested.rfc3339, selectorKind: selector.kind,
            selectorHash: pseudonymizer.pseudonym(selector.hashedText), integrationKey: selector.integrationKey, boundary: boundary,
            targets: targets, archiveDirectories: archiveDirectories)
        plan.countsIntoFleet = fleet != nil
        plan.deadLetterIDs = findings.deadLetterIDs
        plan.lastDeliveredAt = findings.lastDeliveredAt
        if dryRun {
            return Self.report(
                plan, rewrites: perDirectory, deadLetters: plan.deadLetterIDs.count, deduplicationRecords: 0, aggregates: nil, dryRun: true)
        }
        let (planned, plans) = (plan, plans)
        try await io.run { () throws(ErasureError) in
            do throws(LogError) { try plans.store(planned) } catch { throw .log(error) }
        }
        logger.notice(
            "erasing a person's registrations",
            metadata: ["erasure": "\(plan.id)", "selector": "\(plan.selectorHash)", "registrations": "\(targets.count)"])
        return try await finish(plan)
    }

    /// Finishes the erasures a crash or a failure cut short (their plans are in the log's
    /// directory), oldest first, and returns their reports.
    ///
    /// - Throws: ``ErasureError`` at the first that cannot be finished.
    public func finishPending() async throws(ErasureError) -> [ErasureReport] {
        await turns.take()
        defer { turns.end() }
        try refuseWhenClosed()
        return try await finishPlans()
    }

    /// Waits for the erasure under way, if any, and refuses every later one: the log is closing,
    /// or (an adopted stream) is being handed back to its relay, whose reads mask what is left.
    public func close() async {
        await turns.take()
        closed = true
        turns.end()
    }

    private func refuseWhenClosed() throws(ErasureError) {
        if closed { throw .log(.storeUnavailable("the log of this erasure was closed (a stream handed back to its relay): erase there")) }
    }

    /// ``finishPending()`` within a turn already taken.
    private func finishPlans() async throws(ErasureError) -> [ErasureReport] {
        let store = plans
        let pending = try await io.run { () throws(ErasureError) -> [ErasurePlan] in
            do throws(LogError) { return try store.pending(skippingUnreadable: false) } catch { throw .log(error) }
        }
        var reports: [ErasureReport] = []
        for plan in pending {
            logger.notice("finishing an erasure a stop cut short", metadata: ["erasure": "\(plan.id)"])
            reports.append(try await finish(plan))
        }
        return reports
    }

    /// How long the fleet's change may take, waiting for the fleet aggregator's turn included,
    /// before the erasure fails (a session stuck on a PostgreSQL that stopped answering must not
    /// hold the relay's own aggregator, whose turn the erasure holds meanwhile).
    static let fleetPatience: Duration = .seconds(120)

    /// `body`'s result, or ``FleetError/database(_:)`` once `limit` has passed (`body` is cancelled).
    private static func within<Value: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw FleetError.database("no answer within \(limit)")
            }
            return value
        }
    }

    /// Steps 3 to 6 of an erasure whose plan is written.
    private func finish(_ plan: ErasurePlan) async throws(ErasureError) -> ErasureReport {
        // A plan a stop cut short may name registrations of the segment this process appends to
        // (it was the active one when the log reopened): sealed first, the rewrite below replaces
        // a file no commit writes to again.
        _ = await log.sealActiveSegment()
        let sequences = plan.targets.map(\.sequence)
        // Masked at once, whatever fails below: no reader of this process hands them out again,
        // and no lane sends them again. A send already on the wire is waited for (it ends within
        // the request timeout): once the erasure answers, nothing of them can still arrive
        // anywhere, and one delivered meanwhile counts as sent on.
        // The counters' changes take either order: a registration a counter meets masked is
        // recorded in its erased_registrations, and the change skips it.
        let logger = logger
        let deliveredMeanwhile = await log.erasureMask.insertAwaitingSends(sequences) { onTheWire in
            logger.notice(
                "erasure waits for the answers to sends of its registrations already on the wire",
                metadata: ["erasure": "\(plan.id)", "registrations": "\(onTheWire)"])
        }
        var reported = plan
        for index in reported.targets.indices {
            let target = reported.targets[index]
            let tenant = target.tenant.isEmpty ? nil : try? TenantName(validating: target.tenant)
            for kind in sinkKinds where deliveredMeanwhile[kind.cursorName(of: tenant)]?.contains(target.sequence) == true {
                switch kind.role {
                case .delivers: reported.targets[index].forwarded = true
                case .handsOn: reported.targets[index].handedOn = true
                }
            }
        }
        let dataDirectory = dataDirectory
        guard fleet != nil || !plan.countsIntoFleet else {
            throw .fleet(
                "erasure \(plan.id) began at a relay that counts into the fleet's PostgreSQL: finish it with erase --postgres-url, or with serve --postgres-url"
            )
        }
        // The fleet's counts, then the relay's own, nested so that each counter is between two of
        // its transactions meanwhile.
        let fleet = fleet
        let targets = plan.targets
        let fleetStep: @Sendable () async throws -> FleetErasure.Result? = {
            guard let fleet else { return nil }
            do {
                return try await Self.within(Self.fleetPatience) { try await fleet(targets) }
            } catch {
                throw ErasureError.fleet(FleetError.describe(error).description)
            }
        }
        var aggregates: AggregateErasure?
        let fleetResult: FleetErasure.Result?
        do {
            if let aggregator {
                (aggregates, fleetResult) = try await aggregator.applyErasure(targets, whileQuiescent: fleetStep)
            } else {
                fleetResult = try await fleetStep()
                let metrics = metrics
                aggregates = try await io.run { () throws(AggregatorError) -> AggregateErasure? in
                    try Aggregator.applyErasure(targets, dataDirectory: dataDirectory, table: metrics)
                }
            }
        } catch let error as ErasureError {
            throw error
        } catch let error as AggregatorError {
            throw .aggregates(error)
        } catch {
            throw .fleet("\(error)")
        }
        let forwarding: ForwardingStore.Erasure
        do {
            forwarding = try await store.erase(deadLetterIDs: plan.deadLetterIDs, tokenDigests: Set(plan.targets.map(\.tokenDigest)))
        } catch {
            throw .forwarding("\(error)")
        }
        let keys = log.configuration.encryption
        let level = log.configuration.compressionLevel
        let set = Set(sequences)
        let walDirectory = walDirectory
        let fileSystem = fileSystem
        let stream = stream
        let rewrites = try await io.run { () throws(ErasureError) -> [LogErasure.Rewrite] in
            if let stream {
                do throws(LogError) { return [try stream.erase(set, keys: keys, compressionLevel: level)] } catch { throw .log(error) }
            }
            var rewrites: [LogErasure.Rewrite] = []
            for directory in [walDirectory] + plan.archiveDirectories {
                do throws(LogError) {
                    rewrites.append(
                        try LogErasure.erase(
                            set, in: directory, walDirectory: walDirectory, keys: keys, compressionLevel: level, fileSystem: fileSystem))
                } catch {
                    throw .log(error)
                }
            }
            return rewrites
        }
        var report = Self.report(
            reported, rewrites: rewrites, deadLetters: forwarding.deadLetters, deduplicationRecords: forwarding.deliveredRecords,
            aggregates: aggregates,
            dryRun: false)
        report.fleet = fleetResult
        report.completedAt = EventTime.now().rfc3339
        let (finished, plans) = (report, plans)
        try await io.run { () throws(ErasureError) in
            try ErasureAuditLog.append(finished, dataDirectory: dataDirectory, fileSystem: fileSystem)
            do throws(LogError) { try plans.remove(plan) } catch { throw .log(error) }
        }
        logger.notice(
            "erased a person's registrations",
            metadata: [
                "erasure": "\(plan.id)", "selector": "\(plan.selectorHash)", "registrations": "\(plan.targets.count)",
                "dead-letters": "\(forwarding.deadLetters)", "forwarded-before": "\(report.forwarded.toCampaign)",
            ])
        return report
    }

    /// The report of `plan` with what its steps did.
    private static func report(
        _ plan: ErasurePlan, rewrites: [LogErasure.Rewrite], deadLetters: Int, deduplicationRecords: Int, aggregates: AggregateErasure?, dryRun: Bool
    ) -> ErasureReport {
        let sent = plan.targets.filter { $0.forwarded || $0.handedOn }
        var forwarded = ErasureReport.Forwarded()
        forwarded.toCampaign = plan.targets.filter(\.forwarded).count
        forwarded.toCentralRelay = plan.targets.filter(\.handedOn).count
        forwarded.firstReceivedAt = sent.map(\.timeNanoseconds).min().map { EventTime(nanosecondsSinceEpoch: $0).rfc3339 }
        forwarded.lastReceivedAt = sent.map(\.timeNanoseconds).max().map { EventTime(nanosecondsSinceEpoch: $0).rfc3339 }
        forwarded.lastDeliveredAt = plan.lastDeliveredAt
        return ErasureReport(
            id: plan.id, requestedAt: plan.requestedAt, completedAt: nil, dryRun: dryRun,
            selector: .init(kind: plan.selectorKind, hash: plan.selectorHash, integrationKey: plan.integrationKey), registrations: plan.targets.count,
            boundary: plan.boundary, rewrites: rewrites, deadLetters: deadLetters, deduplicationRecords: deduplicationRecords, aggregates: aggregates,
            fleet: nil, forwarded: forwarded, notYetForwarded: plan.targets.count - sent.count,
            originRelays: Array(Set(plan.targets.compactMap(\.originRelayId))).sorted())
    }
}

import Hummingbird
import NIOConcurrencyHelpers
import RelayAggregates
import RelayAggregator
import RelayCore
import RelayEventJSON
import RelayForwarding
import RelayIO
import RelayLog
import RelayPostgres

/// `GET /status` (the page, open to all: it holds no figure) and `GET /v1/status` (its figures,
/// behind ``AdminAuthentication`` when an admin token is set, like the other admin endpoints), and
/// both again under `/{tenant}/`, showing that tenant's destinations and dead letters alone.
struct StatusRoutes: RouteGroup, Sendable {
    /// The data directory, whose `aggregates.sqlite` gives the registrations per app.
    let dataDirectory: String
    let adminToken: String?
    let tenants: TenantDirectory
    let log: WriteAheadLog
    let store: ForwardingStore
    let history: StatusHistory
    var uploader: Uploader?
    var aggregator: Aggregator?
    var fleet: FleetStatus?
    /// How many copies an acknowledgement means.
    var durability: LogDurability
    /// The time of the log's first event, read once per oldest sequence (a frame decode), on a
    /// thread of its own.
    let firstEventTimes = NIOLockedValueBox<(sequence: UInt64, time: EventTime?)?>(nil)
    let logReads = BlockingExecutor(name: "status-read", priority: .background)
    /// The read-only connection to the aggregates, shared with ``AdminRoutes``.
    let counts: OpenedOnce<AggregateQueries>
    /// The metrics the registrations show (``RelayServerConfiguration/aggregateMetrics``).
    var aggregateMetrics: MetricTable = .standard

    func add(to table: RouteTable) {
        table.addForEachTenant(tenants) { group, prefix, scope in
            addPage(to: group, prefix: prefix)
            let routes = group.group(AdminAuthentication(token: adminToken, tenants: tenants))
            routes.get(prefix + "v1/status") { _, context in
                // Without a prefix: every tenant's destinations.
                Responses.json(.ok, APIJSON.text(await report(tenant: prefix.isEmpty ? .all : .only(scope(context).name))))
            }
        }
    }

    private func addPage(to table: RouteTable, prefix: String) {
        table.get(prefix + "status") { _, _ in
            Response(
                status: .ok,
                headers: [
                    .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                    // Everything the page needs is in it; it talks only to this relay.
                    .contentSecurityPolicy:
                        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; form-action 'none'; frame-ancestors 'none'",
                ],
                body: .init(byteBuffer: .init(string: StatusPage.html(aggregateMetrics))))
        }
    }

    /// The figures of `tenant`'s destinations and dead letters (`all`: every tenant's, and the
    /// central relay's); the log's and the counting's figures are the relay's.
    func report(tenant: TenantSelection = .all) async -> StatusReport {
        let now = EventTime.now()
        let durable = await log.durableSequence
        let (intake, delivered) = history.rates()
        let fsync = history.syncPercentiles()
        let dataBytes = await log.dataBytes
        let oldest = await log.oldestSequence
        let firstEventTime = await firstEventTime(oldest: oldest, durable: durable)
        let quota = log.configuration.maximumLogBytes
        let statistics = await log.stats
        let destinations = await StatusReport.Destination.list(of: uploader?.lanes ?? [], tenant: tenant, now: now, delivered: delivered)
        var counting: [StatusReport.Counting] = []
        if let aggregator {
            let next = await aggregator.nextSequence
            counting.append(StatusReport.Counting(store: "sqlite", lag: durable > next ? durable - next : 0))
        }
        if let fleet {
            let state = fleet.current
            counting.append(
                StatusReport.Counting(
                    store: "postgres", lag: state.nextSequence.map { durable > $0 ? durable - $0 : 0 }, lastError: state.lastError))
        }
        let registrationCounts = await registrations(tenant: tenant)
        return StatusReport(
            generatedAt: now.rfc3339, relayId: log.identity.relayID, epoch: log.identity.epoch.number, version: RelayVersion.current,
            intake: .init(eventsPerSecond: intake, lastDurableSequence: durable - 1),
            log: .init(
                dataBytes: dataBytes, diskBytes: await log.diskBytes, quotaBytes: quota,
                quotaUsed: quota.map { Double(dataBytes) / Double(max(1, $0)) }, segments: await log.segmentCount,
                oldestSequence: oldest, firstEventTime: firstEventTime?.rfc3339,
                retainSeconds: Double(log.configuration.retention.age.components.seconds), retainBytes: log.configuration.retention.bytes,
                archiveDirectory: log.configuration.archiveDirectory, segmentsRemoved: statistics.segmentsExpired + statistics.segmentsRemovedForRoom,
                durability: durability.current),
            destinations: destinations, deadLetters: try? await store.pendingDeadLetterCount(tenant: tenant), counting: counting,
            registrations: registrationCounts, fsync: .init(p50Seconds: fsync.p50, p99Seconds: fsync.p99, commits: fsync.count))
    }

    /// The registrations per app of `tenant`, as `stats` shows them: `nil` when this relay does
    /// not count, or its aggregates cannot be read now (the report is shown without them).
    func registrations(tenant: TenantSelection) async -> [RegistrationCounts]? {
        guard aggregator != nil else { return nil }
        do {
            return try await counts.queries(dataDirectory: dataDirectory, metrics: aggregateMetrics).registrations(tenant: tenant)
        } catch {
            return nil
        }
    }

    /// The event time of the first event kept, cached until the oldest segment goes.
    func firstEventTime(oldest: UInt64, durable: UInt64) async -> EventTime? {
        if let known = firstEventTimes.withLockedValue({ $0 }), known.sequence == oldest, known.time != nil { return known.time }
        guard durable > oldest else { return nil }
        let time = await logReads.run { [log] () -> EventTime? in (try? log.firstEvent(from: oldest, below: durable))??.event.time }
        firstEventTimes.withLockedValue { $0 = (oldest, time) }
        return time
    }
}

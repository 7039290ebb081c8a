import Hummingbird
import RelayAggregates
import RelayAggregator
import RelayCore
import RelayEventJSON
import RelayForwarding
import RelayLog
import RelayPostgres

/// The admin endpoints: counts, dead letters and metrics, behind ``AdminAuthentication`` when an
/// admin token is set. Counts and dead letters are there twice: `/v1/…` for every tenant (each row
/// names its own; `/v1/deliveries/{id}` is the default tenant's delivery) and `/{tenant}/v1/…` for
/// one tenant alone, which that tenant's admin token may read.
struct AdminRoutes: RouteGroup, Sendable {
    let dataDirectory: String
    let adminToken: String?
    let tenants: TenantDirectory
    let metrics: RelayMetrics
    let store: ForwardingStore
    let log: WriteAheadLog
    /// The read-only connection to the aggregates, shared with ``StatusRoutes``.
    let queries: OpenedOnce<AggregateQueries>
    /// The fleet's counts (`serve --postgres-url`): `/v1/deliveries` answers them instead of this
    /// relay's own.
    var fleet: FleetQueries? = nil
    /// The aggregator whose lag a scrape reports as of now, when `serve` counts.
    var aggregator: Aggregator? = nil
    /// The metrics `/v1/deliveries` lists (``RelayServerConfiguration/aggregateMetrics``).
    var aggregateMetrics: MetricTable = .standard

    func add(to table: RouteTable) {
        table.addForEachTenant(tenants) { group, prefix, scope in
            let routes = group.group(AdminAuthentication(token: adminToken, tenants: tenants))
            // Without a prefix the lists show every tenant; a delivery id names the default tenant's.
            let whose = { @Sendable (context: BasicRequestContext, list: Bool) -> TenantSelection in
                prefix.isEmpty && list ? .all : .only(scope(context).name)
            }
            routes.get(prefix + "v1/deliveries") { request, context in
                switch request.nonNegativeIntegerParameter("limit") {
                case .success(let limit): return await deliveries(nil, tenant: whose(context, true), limit: limit)
                case .failure(let error): return error.response
                }
            }
            routes.get(prefix + "v1/deliveries/:id") { _, context in
                let id = context.parameters.get("id") ?? ""
                return await deliveries(id, tenant: whose(context, false), limit: nil)
            }
            routes.get(prefix + "v1/deadletters") { request, context in
                switch request.nonNegativeIntegerParameter("limit") {
                case .success(let limit): return await deadLetters(tenant: whose(context, true), limit: limit, request: request)
                case .failure(let error): return error.response
                }
            }
        }
        let routes = table.group(AdminAuthentication(token: adminToken, tenants: tenants))
        routes.get("metrics") { _, _ in
            // What a scrape must see as of now (the lanes' ages are computed as it renders, the
            // aggregator's lag here, so that a benchmark sampling it every 100 ms sees it move);
            // the rest is recorded as it happens or sampled once a second.
            let durable = await log.durableSequence
            metrics.lastDurableSequence.set(Int64(durable) - 1)
            if let aggregator { metrics.aggregatorLag.set(Int64(durable) - Int64(aggregator.committedNextSequence)) }
            await metrics.process.sample()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: .init(bytes: metrics.render()))
            )
        }
    }

    func deliveries(_ id: String?, tenant: TenantSelection, limit: Int?) async -> Response {
        let of = tenant == .all ? "" : " of tenant \(tenant.storedName.map { TenantName.displayName(stored: $0) } ?? "")"
        if let fleet {
            let report: FleetReport
            do {
                report = try await fleet.report(tenant: tenant, deliveryId: id, limit: limit)
            } catch {
                return Responses.error(.serviceUnavailable, "the fleet's counts cannot be read from PostgreSQL now: \(error)")
            }
            if let id {
                guard let row = report.deliveries.first else {
                    return Responses.error(.notFound, "no events counted for delivery \(id)\(of) in the fleet")
                }
                return Responses.json(.ok, APIJSON.text(row))
            }
            return Responses.json(.ok, APIJSON.text(report))
        }
        let queries: AggregateQueries
        do {
            queries = try await self.queries.queries(dataDirectory: dataDirectory, metrics: aggregateMetrics)
        } catch {
            return Responses.error(.serviceUnavailable, "aggregates are not available yet: \(error)")
        }
        do {
            if let id {
                let rows = try await queries.deliveries(tenant: tenant, deliveryId: id, limit: limit)
                guard let row = rows.first else { return Responses.error(.notFound, "no events counted for delivery \(id)\(of)") }
                return Responses.json(.ok, APIJSON.text(row))
            }
            return Responses.json(.ok, APIJSON.text(try await queries.report(tenant: tenant, limit: limit)))
        } catch {
            return Responses.error(.internalServerError, "reading the aggregates failed: \(error)")
        }
    }

    /// The dead letters, their personal data shown as keyed hashes unless `?reveal=personal-data`
    /// asks, which only the relay's own admin token may (or anyone, on a relay without one).
    func deadLetters(tenant: TenantSelection, limit: Int?, request: Request) async -> Response {
        let reveal = request.uri.queryParameters.get("reveal")
        if let reveal, reveal != "personal-data" {
            return Responses.error(.badRequest, "query parameter reveal=\(reveal) is not taken: reveal=personal-data shows what the hashes stand for")
        }
        if reveal != nil, let adminToken, !AdminAuthentication(token: adminToken).matches(request.headers[.authorization] ?? "") {
            return Responses.error(.forbidden, "reveal=personal-data needs the relay's own admin token (--admin-token), not a tenant's")
        }
        do {
            let letters = try await store.deadLetters(tenant: tenant, limit: limit)
            let redaction: Pseudonymizer?
            do {
                redaction = reveal == nil ? try await store.pseudonymizer() : nil
            } catch {
                return Responses.error(.internalServerError, "dead letters are not shown without their personal data hidden: \(error)")
            }
            return Responses.json(.ok, APIJSON.text(DeadLetterList(letters, redaction: redaction)))
        } catch {
            return Responses.error(.internalServerError, "reading the dead letters failed: \(error)")
        }
    }
}

import RelayCore
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog
@testable import RelayPostgres

/// A tenant's share of the log (`max-wal-bytes` of `[tenant.NAME]`) on the log kept in PostgreSQL,
/// as on files: refused past its limit while other tenants append, freed as its destinations pass
/// its events, and read back from the stream after a reopen.
@Suite("Tenant shares of the log kept in PostgreSQL", .timeLimit(.minutes(5)), .tier(.thorough))
struct PostgresLogTenantShareTests {
    typealias Fixture = PostgresLogFixture

    static func hit(_ id: Int64, tenant: TenantName?) -> Event {
        var event = Fixture.event(id)
        event.tenant = tenant
        return event
    }

    @Test("a tenant past its share gets tenantFull while another appends; its destination passing frees it; a reopened stream reads the share back")
    func refusedPastItsShare() async throws {
        let a = try TenantName(validating: "brand-a")
        let b = try TenantName(validating: "brand-b")
        try await Fixture.withCluster { postgres in
            var configuration = Fixture.configuration
            configuration.tenantLogShares = [a: TenantLogShare(limitBytes: 2_000, consumers: ["upload-tracking_brand-a"])]
            let consumers: [LogConsumerDeclaration] = [.cursorFile("upload-tracking_brand-a")]
            let log = try await Fixture.open(postgres, stream: "tenants", configuration: configuration, consumers: consumers)
            var stored: Int64 = 0
            var refusal: LogError?
            while refusal == nil, stored < 10_000 {
                do throws(LogError) {
                    _ = try await log.append((0..<10).map { Self.hit(stored + $0 + 1, tenant: a) })
                    stored += 10
                } catch {
                    refusal = error
                }
            }
            guard case .tenantFull(let tenant, let used, let limit)? = refusal else {
                Issue.record("brand-a was never refused: \(String(describing: refusal))")
                return
            }
            #expect(tenant == a && limit == 2_000 && used >= 2_000)
            #expect(stored > 0 && used < 2_000 + 10 * 64, "passed by at most one append")
            #expect(await log.tenantShares()[a]?.owedBytes == used)
            // Another tenant and the default tenant are taken.
            _ = try await log.append([Self.hit(90_001, tenant: b), Self.hit(90_002, tenant: nil)])
            await log.close()

            // Reopened: the share is read back from the stream's rows, then in force again.
            let reopened = try await Fixture.open(postgres, stream: "tenants", configuration: configuration, consumers: consumers)
            try await Fixture.waitFor("brand-a's share to be read back") { await reopened.tenantShares()[a] != nil }
            let readBack = try #require(await reopened.tenantShares()[a]?.owedBytes)
            #expect(readBack >= used && readBack < 2 * used, "\(readBack) read back, \(used) when written")
            await #expect(throws: LogError.tenantFull(tenant: a, usedBytes: readBack, limitBytes: 2_000)) {
                try await reopened.append([Self.hit(90_003, tenant: a)])
            }
            // Its destination passes everything: brand-a owes nothing and is taken again.
            try await reopened.commitCursor("upload-tracking_brand-a", to: await reopened.durableSequence)
            #expect(await reopened.tenantShares()[a]?.owedBytes == 0)
            _ = try await reopened.append([Self.hit(90_004, tenant: a)])
            await reopened.close()
        }
    }
}

import RelayTestSupport
import TestTiers
import Testing

@testable import RelayCore
@testable import RelayLog

/// A tenant's share of the log: the bytes of its events its own destinations have not passed,
/// refused past its limit while other tenants' appends go on.
@Suite("Tenant shares of the log", .tier(.fast))
struct TenantShareTests {
    static let brandA = try? TenantName(validating: "brand-a")
    static let brandB = try? TenantName(validating: "brand-b")

    @Test(
        "the ledger owes each tenant's own bytes until its floor passes their commit, merges old entries without owing less, and prepends what was read back"
    )
    func ledger() throws {
        let a = try #require(Self.brandA)
        let b = try #require(Self.brandB)
        var ledger = TenantLogShareLedger()
        ledger.record([a: 100, b: 7], end: 10)
        ledger.record([a: 50], end: 20)
        ledger.record([a: 0], end: 25)
        #expect(ledger.owed(by: a) == 150 && ledger.owed(by: b) == 7)
        ledger.release(a, below: 9)
        #expect(ledger.owed(by: a) == 150, "the floor has not reached the first commit's end")
        ledger.release(a, below: 10)
        #expect(ledger.owed(by: a) == 50)
        #expect(ledger.owed(by: b) == 7, "another tenant's floor is its own")
        ledger.release(a, below: 1000)
        #expect(ledger.owed(by: a) == 0 && ledger.entries[a] == nil)
        // Past the entry limit, neighbours merge: the total stays, and nothing is released early.
        for index in 1...(TenantLogShareLedger.maximumEntries + 1) { ledger.record([a: 1], end: UInt64(1000 + index)) }
        #expect(ledger.owed(by: a) == Int64(TenantLogShareLedger.maximumEntries + 1))
        #expect((ledger.entries[a]?.count ?? 0) <= TenantLogShareLedger.maximumEntries / 2 + 1)
        ledger.release(a, below: 1001)
        #expect(ledger.owed(by: a) == Int64(TenantLogShareLedger.maximumEntries + 1), "a merged entry goes only once its later end is passed")
        ledger.release(a, below: 1002)
        #expect(ledger.owed(by: a) == Int64(TenantLogShareLedger.maximumEntries - 1))
        var earlier = TenantLogShareLedger()
        earlier.record([b: 3], end: 5)
        earlier.record([b: 4], end: 10)
        ledger.replace([b], upTo: 10, with: earlier)
        #expect(ledger.owed(by: b) == 7 && ledger.entries[b]?.map(\.end) == [5, 10], "read back up to 10, in place of what was recorded")
        ledger.record([b: 1], end: 12)
        ledger.replace([b], upTo: 10, with: earlier)
        #expect(ledger.owed(by: b) == 8 && ledger.entries[b]?.map(\.end) == [5, 10, 12], "what came after the read stays")
    }

    static func hit(_ id: Int64, tenant: TenantName?) -> Event {
        var event = TestEvents.tracking(id)
        event.tenant = tenant
        return event
    }

    @Test(
        "a tenant past its share gets tenantFull while the others append; its destinations passing frees it; after reopening the share is read back")
    func refusedPastItsShare() async throws {
        let a = try #require(Self.brandA)
        let b = try #require(Self.brandB)
        let directory = temporaryDirectory("tenant-share")
        defer { removeTree(directory) }
        var configuration = LogConfiguration()
        configuration.tenantLogShares = [a: TenantLogShare(limitBytes: 2_000, consumers: ["upload-tracking_brand-a"])]
        let consumers: [LogConsumerDeclaration] = [.cursorFile("upload-tracking_brand-a")]
        let log = try await WriteAheadLog.open(dataDirectory: directory, configuration: configuration, consumers: consumers, logger: quietLogger)
        var stored = 0
        var refusal: LogError?
        while refusal == nil, stored < 10_000 {
            do {
                _ = try await log.append((0..<10).map { Self.hit(Int64(stored + $0), tenant: a) })
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
        let owed = try #require(await log.tenantShares()[a])
        #expect(owed.owedBytes == used)
        // The others are taken: another tenant, the default tenant, and events handed on by a relay.
        _ = try await log.append([Self.hit(1, tenant: b), Self.hit(2, tenant: nil)])
        var relayed = Self.hit(3, tenant: a)
        relayed.chain = ChainOrigin(first: try RelayPosition(relayID: "598ef5b4-921c-4ba5-b8e1-ef71a5e2a510", epoch: 1, sequence: 1))
        _ = try await log.append([relayed])
        await #expect(throws: LogError.self) { try await log.append([Self.hit(4, tenant: a)]) }
        #expect(await log.stats.tenantRejections == 2)

        // After reopening, the share is read back from the log, then in force again.
        await log.close()
        let reopened = try await WriteAheadLog.open(dataDirectory: directory, configuration: configuration, consumers: consumers, logger: quietLogger)
        var shares = await reopened.tenantShares()
        while shares[a] == nil {
            try await Task.sleep(for: .milliseconds(5))
            shares = await reopened.tenantShares()
        }
        // Read back, each event counts as it encodes alone (its time whole, not a delta): a little
        // more than when it was written, never less.
        let readBack = try #require(shares[a]?.owedBytes)
        #expect(readBack > used && readBack < 2 * used, "\(readBack) read back, \(used) when written")
        await #expect(throws: LogError.tenantFull(tenant: a, usedBytes: readBack, limitBytes: 2_000)) {
            try await reopened.append([Self.hit(5, tenant: a)])
        }
        // Its destination passes everything: brand-a owes nothing, and is taken again.
        try await reopened.commitCursor("upload-tracking_brand-a", to: await reopened.durableSequence)
        #expect(await reopened.tenantShares()[a]?.owedBytes == 0)
        _ = try await reopened.append([Self.hit(6, tenant: a)])
        await reopened.close()
    }
}

public import RelayCore
import RelayIO

extension WriteAheadLog {
    /// Each tenant with a share of the log: what its destinations owe and its limit, in bytes. A
    /// tenant whose owed bytes are still being read back from the log (after opening, or after its
    /// share was set) is absent.
    public func tenantShares() -> [TenantName: (owedBytes: Int64, limitBytes: Int64)] {
        logShares.figures(positions: consumerRegistry.positions, end: nextSequence)
    }

    /// Sets the tenants' shares of the log (a reload of the configuration): a tenant given a share,
    /// or whose destinations changed, has what it owes read back from the log first; a tenant whose
    /// share is gone is limited by ``LogConfiguration/maximumLogBytes`` alone.
    public func setTenantLogShares(_ shares: [TenantName: TenantLogShare]) {
        startTenantReadBack(for: logShares.set(shares))
    }

    /// Reads back from the log what `tenants` owe, from the lowest of their floors to the durable
    /// end, on a thread of its own; commits meanwhile are recorded as they happen. Until it is
    /// done, only ``LogConfiguration/maximumLogBytes`` limits them.
    func startTenantReadBack(for tenants: Set<TenantName>) {
        let end = nextSequence
        guard let floor = logShares.beginReadBack(of: tenants, positions: consumerRegistry.positions, end: end) else { return }
        let reader = reader(from: max(floor, oldestSequence))
        logger.notice(
            "reading back what tenants' destinations still owe; until done, only --max-wal-bytes limits them",
            metadata: ["tenants": "\(tenants.map(\.text).sorted().joined(separator: ","))", "from": "\(floor)", "to": "\(end - 1)"])
        Task {
            let started = ContinuousClock.now
            let (_, result) = await BlockingExecutor(name: "tenant-ledger").run(moving: reader) {
                (owned: inout any FrameReader) throws(LogError) -> TenantLogShareLedger in
                try TenantLogShares.readBack(&owned, tenants: tenants, end: end)
            }
            self.finishTenantReadBack(result, of: tenants, upTo: end, startedAt: started)
        }
    }

    private func finishTenantReadBack(
        _ result: Result<TenantLogShareLedger, LogError>, of tenants: Set<TenantName>, upTo end: UInt64, startedAt started: ContinuousClock.Instant
    ) {
        logShares.finishReadBack(result, of: tenants, end: end)
        switch result {
        case .success:
            logger.notice(
                "tenants' shares of the log are in force",
                metadata: [
                    "owed": "\(tenants.map { "\($0.text)=\(logShares.owed(by: $0))" }.sorted().joined(separator: ","))",
                    "took": "\((ContinuousClock.now - started).humanText)",
                ])
        case .failure(let error):
            // What was recorded since the read began is kept: it owes less than the truth, never
            // more, until the tenant's destinations pass it.
            logger.error(
                "could not read back what tenants owe; their shares count from now on", metadata: ["error": "\(error)", "tenants": "\(tenants)"])
        }
    }
}

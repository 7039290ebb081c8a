import RelayCore

/// Each tenant's share of the log (`max-wal-bytes` of `[tenant.NAME]`): the shares, what each
/// tenant owes (``TenantLogShareLedger``, fed from the commit reports), and the refusal of an append
/// whose tenant's share is full.
///
/// A value the ``WriteAheadLog`` owns and drives: it records every commit's tenant bytes
/// (``record(_:end:)``), asks before a commit whether an append is refused
/// (``refusal(for:positions:end:)``), and, after opening or when shares change, reads back from
/// the log what tenants already owe (``beginReadBack(of:positions:end:)``, ``readBack(_:tenants:end:)``,
/// ``finishReadBack(_:of:end:)``).
struct TenantLogShares: Sendable {
    /// Each tenant's share.
    private(set) var shares: [TenantName: TenantLogShare]
    /// What each tenant owes, tallied by every commit while any tenant has a share.
    private var ledger = TenantLogShareLedger()
    /// Tenants whose owed bytes are being read back from the log: until then only
    /// ``LogConfiguration/maximumLogBytes`` limits them.
    private var unread: Set<TenantName> = []

    /// The shares the log opened with.
    init(_ shares: [TenantName: TenantLogShare]) {
        self.shares = shares
    }

    /// Whether commits must tally each tenant's bytes: while any tenant has a share.
    var tallies: Bool { !shares.isEmpty }

    /// The lowest cursor of a tenant's destinations in `positions`: what they have all passed
    /// (`end`, the durable end, when none has a cursor).
    private func floor(_ share: TenantLogShare, positions: [String: UInt64], end: UInt64) -> UInt64 {
        share.consumers.compactMap { positions[$0] }.min() ?? end
    }

    /// The refusal of an append of `events` whose tenant's share is full; `nil` to take it.
    ///
    /// An append's tenant is its first event's (an HTTP request's events are all of one tenant).
    /// Events another relay handed on are never refused here: one refusal inside an ordered batch
    /// would hold back every tenant behind it, and the sending relay checked them on intake. The
    /// share is checked before the group commit, against what is committed: a share is passed by
    /// at most the appends of one group commit.
    mutating func refusal(for events: [Event], positions: [String: UInt64], end: UInt64) -> LogError? {
        guard !shares.isEmpty, let first = events.first, first.chain == nil, let tenant = first.tenant, let share = shares[tenant],
            !unread.contains(tenant)
        else { return nil }
        let owed = owedBytes(of: tenant, share: share, positions: positions, end: end)
        return owed >= share.limitBytes ? .tenantFull(tenant: tenant, usedBytes: owed, limitBytes: share.limitBytes) : nil
    }

    /// The bytes of `tenant`'s events its destinations have not all passed.
    private mutating func owedBytes(of tenant: TenantName, share: TenantLogShare, positions: [String: UInt64], end: UInt64) -> Int64 {
        ledger.release(tenant, below: floor(share, positions: positions, end: end))
        return ledger.owed(by: tenant)
    }

    /// A commit ending before `end` held `bytes` of each tenant's events.
    mutating func record(_ bytes: [TenantName: Int64], end: UInt64) {
        if !bytes.isEmpty { ledger.record(bytes, end: end) }
    }

    /// Each tenant with a share whose owed bytes are known: what it owes and its limit.
    mutating func figures(positions: [String: UInt64], end: UInt64) -> [TenantName: (owedBytes: Int64, limitBytes: Int64)] {
        var figures: [TenantName: (owedBytes: Int64, limitBytes: Int64)] = [:]
        for (tenant, share) in shares where !unread.contains(tenant) {
            figures[tenant] = (owedBytes(of: tenant, share: share, positions: positions, end: end), share.limitBytes)
        }
        return figures
    }

    /// Sets the shares; returns the tenants given a share or whose destinations changed, whose
    /// owed bytes must be read back. A tenant whose share is gone is forgotten.
    mutating func set(_ newShares: [TenantName: TenantLogShare]) -> Set<TenantName> {
        let changed = Set(newShares.filter { shares[$0.key]?.consumers != $0.value.consumers }.keys)
        for tenant in shares.keys where newShares[tenant] == nil { ledger.remove(tenant) }
        shares = newShares
        return changed
    }

    /// Where a read-back of `tenants` starts: the lowest of their floors. `nil` when there is
    /// nothing to read (then they owe nothing before `end`); otherwise they count as unread until
    /// ``finishReadBack(_:of:end:)``.
    mutating func beginReadBack(of tenants: Set<TenantName>, positions: [String: UInt64], end: UInt64) -> UInt64? {
        let reading = shares.filter { tenants.contains($0.key) }
        guard !reading.isEmpty else { return nil }
        let start = reading.values.map { floor($0, positions: positions, end: end) }.min() ?? end
        guard start < end else {
            ledger.replace(tenants, upTo: end, with: TenantLogShareLedger())
            return nil
        }
        unread.formUnion(tenants)
        return start
    }

    /// Reads back what `tenants` owe from `reader` up to `end`: each event counted as it encodes
    /// alone. It reads files: call it on a thread made for blocking calls.
    static func readBack(_ reader: inout any FrameReader, tenants: Set<TenantName>, end: UInt64) throws(LogError) -> TenantLogShareLedger {
        var earlier = TenantLogShareLedger()
        while true {
            let batch = try reader.read(maximumEvents: 4096, below: end)
            guard let last = batch.events.last else { break }
            var bytes: [TenantName: Int64] = [:]
            for logged in batch.events {
                guard let tenant = logged.event.tenant, tenants.contains(tenant) else { continue }
                bytes[tenant, default: 0] += Int64(EventBinaryCodec.encode(CollectionOfOne(logged.event)).count)
            }
            earlier.record(bytes, end: last.sequence + 1)
        }
        reader.close()
        return earlier
    }

    /// The read-back of `tenants` up to `end` is over: on success its entries take the place of
    /// what was recorded up to `end` (commits after it stay); on failure, what was recorded since
    /// it began is kept, which owes less than the truth, never more.
    mutating func finishReadBack(_ result: Result<TenantLogShareLedger, LogError>, of tenants: Set<TenantName>, end: UInt64) {
        unread.subtract(tenants)
        if case .success(let earlier) = result { ledger.replace(tenants, upTo: end, with: earlier) }
    }

    /// What `tenant` owes as last released.
    func owed(by tenant: TenantName) -> Int64 { ledger.owed(by: tenant) }
}

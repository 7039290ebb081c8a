import RelayCore

/// How many bytes of each tenant's events its own destinations have not taken yet: what a
/// tenant's share of the log (`max-wal-bytes` of `[tenant.NAME]`) limits.
///
/// Each commit that holds a tenant's events adds an entry, the bytes of those events (their encoding
/// before compression, which is at least what they take on disk) up to the commit's end. An entry
/// is owed while the tenant's *floor*, the lowest cursor of its destinations, is below its end. So a
/// tenant pays for its own events alone: the segments a slow tenant keeps on disk also hold other
/// tenants' forwarded events, which count for nobody here (the relay's `--max-wal-bytes` limits the
/// disk itself).
///
/// After the log opens, the entries of the events already owed are read back from the log
/// (``WriteAheadLog``), each event counted as it encodes alone: its time whole rather than a delta
/// from the event before, a few bytes more than when it was written, never less.
///
/// Memory stays bounded: past ``maximumEntries`` entries for a tenant, neighbouring entries are
/// merged two by two (a merged entry is released only once the floor passes the later end, which
/// owes a little more for a little longer, never less). A pure value, driven by ``WriteAheadLog``.
struct TenantLogShareLedger: Sendable {
    /// One commit's bytes of a tenant, owed until the floor reaches `end`.
    struct Entry: Sendable, Hashable {
        /// The sequence after the commit's last event.
        var end: UInt64
        /// Bytes of the tenant's events in it.
        var bytes: Int64
    }

    /// The most entries kept per tenant before the oldest are merged.
    static let maximumEntries = 4096

    private(set) var entries: [TenantName: [Entry]] = [:]
    /// Each tenant's owed bytes: the sum of its entries.
    private(set) var owed: [TenantName: Int64] = [:]

    /// Records a commit ending before `end` that held `bytes` of each tenant's events.
    mutating func record(_ bytes: [TenantName: Int64], end: UInt64) {
        for (tenant, count) in bytes where count > 0 {
            var list = entries[tenant, default: []]
            if let last = list.last, last.end == end {
                list[list.count - 1].bytes += count
            } else {
                list.append(Entry(end: end, bytes: count))
            }
            if list.count > Self.maximumEntries {
                // Halved in one pass, so each commit costs O(1) on average.
                list = stride(from: 0, to: list.count, by: 2).map { index in
                    index + 1 < list.count ? Entry(end: list[index + 1].end, bytes: list[index].bytes + list[index + 1].bytes) : list[index]
                }
            }
            entries[tenant] = list
            owed[tenant, default: 0] += count
        }
    }

    /// Releases `tenant`'s entries its destinations have all passed (`floor`: their lowest cursor).
    mutating func release(_ tenant: TenantName, below floor: UInt64) {
        guard var list = entries[tenant], let first = list.first, first.end <= floor else { return }
        let passed = list.prefix { $0.end <= floor }
        owed[tenant, default: 0] -= passed.reduce(0) { $0 + $1.bytes }
        list.removeFirst(passed.count)
        entries[tenant] = list.isEmpty ? nil : list
        if list.isEmpty { owed[tenant] = nil }
    }

    /// What `tenant` owes.
    func owed(by tenant: TenantName) -> Int64 { owed[tenant] ?? 0 }

    /// Puts `earlier`, the entries of `tenants` read back from the log up to `end`, in place of
    /// what this ledger recorded for them up to `end` (commits after it stay: they were recorded as
    /// they happened, while the log was read). Entries stay in sequence order.
    mutating func replace(_ tenants: Set<TenantName>, upTo end: UInt64, with earlier: TenantLogShareLedger) {
        for tenant in tenants {
            let later = (entries[tenant] ?? []).filter { $0.end > end }
            let list = (earlier.entries[tenant] ?? []) + later
            entries[tenant] = list.isEmpty ? nil : list
            owed[tenant] = list.isEmpty ? nil : list.reduce(0) { $0 + $1.bytes }
        }
    }

    /// Forgets `tenant` (its share was taken away).
    mutating func remove(_ tenant: TenantName) {
        entries[tenant] = nil
        owed[tenant] = nil
    }
}

/// A tenant's share of the log (`max-wal-bytes` of `[tenant.NAME]`).
public struct TenantLogShare: Sendable, Hashable {
    /// The most bytes of the tenant's events (encoded, before compression) its destinations may owe.
    public var limitBytes: Int64
    /// The cursors of its destinations: what they have all passed is no longer owed. None: nothing
    /// takes its events from the log, and it owes nothing (only ``LogConfiguration/maximumLogBytes``
    /// limits it).
    public var consumers: [String]

    /// A share of `limitBytes`, released as `consumers` pass.
    public init(limitBytes: Int64, consumers: [String]) {
        self.limitBytes = limitBytes
        self.consumers = consumers
    }
}

public import RelayAggregator
public import RelayLog

/// Why an erasure failed. What was done before stays done; its plan stays, and the next `serve`
/// or `erase` finishes it.
public enum ErasureError: Error, Sendable, CustomStringConvertible {
    /// The log could not be read or rewritten.
    case log(LogError)
    /// The aggregates could not be changed.
    case aggregates(AggregatorError)
    /// The fleet's PostgreSQL could not be changed (unreachable, or failing).
    case fleet(String)
    /// The forwarding store (dead letters, deduplication state) could not be read or changed.
    case forwarding(String)
    /// The audit log could not be read or written.
    case audit(String)

    public var description: String {
        switch self {
        case .log(let error): "the log: \(error)"
        case .aggregates(let error): "the aggregates: \(error)"
        case .fleet(let message): "the fleet's PostgreSQL (the erasure finishes once it answers, at the next erase or start): \(message)"
        case .forwarding(let message): "the forwarding store: \(message)"
        case .audit(let message): "the audit log: \(message)"
        }
    }
}

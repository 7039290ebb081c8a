package import RelayAggregates
package import RelayCore
import RelayLog

extension CountDeltas {
    /// Reduces `batch` for the metrics of `table`, each token kept as its ``TokenDigest``.
    package init(_ batch: some Sequence<SequencedEvent>, table: MetricTable = .standard) {
        self.init(batch, table: table, tokenDigest: TokenDigest.hex)
    }
}

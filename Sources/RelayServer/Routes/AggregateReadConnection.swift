import RelayAggregates
import RelayAggregator

extension OpenedOnce where Value == AggregateQueries {
    /// The one read-only connection to the aggregates of `dataDirectory` that the admin and
    /// status routes share, opened by the first request that finds `aggregates.sqlite` (it may not
    /// exist yet when the server starts), reading the metrics of `metrics` (the same table for
    /// every caller: the server's ``RelayServerConfiguration/aggregateMetrics``).
    ///
    /// - Throws: ``AggregatorError`` when the database cannot be opened now.
    func queries(dataDirectory: String, metrics: MetricTable = .standard) async throws(AggregatorError) -> AggregateQueries {
        let path = Aggregator.databasePath(dataDirectory: dataDirectory)
        return try await value { () async throws(AggregatorError) in try await AggregateQueries(path: path, metrics: metrics) }
    }
}

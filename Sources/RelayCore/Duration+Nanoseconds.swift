extension Duration {
    /// The duration in whole nanoseconds, saturating at `Int64.max` for durations too long for it.
    public var nanoseconds: Int64 {
        let (seconds, overflow) = components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, overflowAgain) = seconds.addingReportingOverflow(components.attoseconds / 1_000_000_000)
        return overflow || overflowAgain ? (components.seconds < 0 ? Int64.min : Int64.max) : total
    }

    /// The duration in seconds, as metrics and JSON show durations.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// How long, and within how many bytes, the log keeps segments every consumer has passed, so that
/// `replay` still finds yesterday's events the morning after.
///
/// A sealed segment whose events every cursor has passed is deleted (or archived, see
/// ``LogConfiguration/archiveDirectory``) once its newest event was written more than ``age``
/// ago, or earlier, oldest first, while the log takes more than ``bytes``. A segment some
/// consumer still needs is never deleted, whatever the quota says.
public struct LogRetention: Sendable, Hashable {
    /// How long a passed segment is kept after its last event was written. `.zero` deletes it as
    /// soon as every consumer has passed it.
    public var age: Duration
    /// The most bytes (segment headers and frames) the log may take before passed segments are
    /// deleted ahead of their age, oldest first; `nil`: no quota.
    public var bytes: Int64?

    /// A retention from its parts.
    public init(age: Duration, bytes: Int64?) {
        self.age = age
        self.bytes = bytes
    }

    /// The default: a day, within 10 GiB. A tracking hit takes about 8.5 bytes of log
    /// (`Benchmarks/replay.sh`), so a day at 1,000 hits/s is 0.74 GB and the quota holds a day
    /// up to about 14,600 hits/s; a relay busier than that keeps what fits, newest first.
    public static let standard = LogRetention(age: .seconds(86_400), bytes: 10 << 30)

    /// Keeps every segment: for a process that opens the log for something else than consuming it
    /// (`erase`), whose consumers it does not know, so that it never deletes what they keep.
    public static let keepingEverything = LogRetention(age: .seconds(Int64(Int32.max) * 100), bytes: nil)

    /// Nothing kept: a segment goes as soon as every consumer has passed it.
    public static let none = LogRetention(age: .zero, bytes: nil)

    /// The age in nanoseconds, saturating.
    var ageNanoseconds: Int64 {
        let (seconds, attoseconds) = age.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}

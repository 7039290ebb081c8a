#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The system clocks, read where a number is needed rather than an ``EventTime``: file headers,
/// durations, `Retry-After` dates.
public enum SystemClock {
    /// Wall-clock nanoseconds since the Unix epoch.
    public static func wallNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// Wall-clock seconds since the Unix epoch.
    public static func wallSeconds() -> Double {
        Double(wallNanoseconds()) / 1e9
    }

    /// Monotonic nanoseconds, for measuring durations (unaffected by clock changes).
    public static func monotonicNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}

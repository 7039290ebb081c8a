#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How many client connections the server holds at once: its descriptor limit (`ulimit -n`) less a
/// reserve for everything else the process opens.
///
/// Every accepted connection takes a descriptor. Without a bound, a flood of connections takes
/// them all: then the log cannot start a segment, SQLite cannot open its journal, cursors cannot
/// be written, and the relay died with SIGILL (libdispatch's thread-pool monitor, under Swift's
/// executors, traps when its `open` of `/proc/self/task/*/stat` fails). Connections beyond the
/// budget wait in the kernel's listen backlog until others close.
enum ConnectionBudget {
    /// The budget for this process, once its soft limit is raised to the hard one (as Go's runtime
    /// does): a shell's default of 1,024 would otherwise cap a relay at 768 connections on a machine
    /// that allows far more.
    static func maximumConnections() -> Int {
        var limit = rlimit()
        #if canImport(Glibc)
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return maximumConnections(descriptorLimit: 1024) }
        // RLIM_INFINITY is the largest value: a million is plenty, and the kernel refuses more anyway.
        let hard = min(limit.rlim_max, rlim_t(1 << 20))
        if limit.rlim_cur < hard {
            var raised = limit
            raised.rlim_cur = hard
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return maximumConnections(descriptorLimit: min(Int(clamping: limit.rlim_cur), 1 << 20))
    }

    /// The budget for a descriptor limit: a quarter of it, and at least 64 descriptors, stay for
    /// the log, SQLite, TLS files and the runtime.
    static func maximumConnections(descriptorLimit: Int) -> Int {
        max(8, descriptorLimit - max(64, descriptorLimit / 4))
    }
}

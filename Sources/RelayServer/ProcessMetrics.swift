import NIOConcurrencyHelpers
import Prometheus
import RelayIO

#if canImport(Glibc)
    import Glibc
#endif

/// The standard `process_*` metrics of Prometheus clients, read from `/proc/self` (Linux).
final class ProcessMetrics: Sendable {
    private let gauges = NIOLockedValueBox<Gauges?>(nil)
    /// procfs reads are file reads: they run here, never on the cooperative pool.
    private let reading = BlockingExecutor(name: "proc-sampler", priority: .background)

    struct Gauges: Sendable {
        var cpuSeconds: Counter
        var residentBytes: Gauge
        var virtualBytes: Gauge
        var openDescriptors: Gauge
        var maximumDescriptors: Gauge
        var startTime: Gauge
        var cpuSecondsSeen: Double
    }

    func register(in registry: PrometheusCollectorRegistry) {
        let made = Gauges(
            cpuSeconds: registry.makeCounter(descriptor: .named("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.")),
            residentBytes: registry.makeGauge(descriptor: .named("process_resident_memory_bytes", "Resident memory size in bytes.")),
            virtualBytes: registry.makeGauge(descriptor: .named("process_virtual_memory_bytes", "Virtual memory size in bytes.")),
            openDescriptors: registry.makeGauge(descriptor: .named("process_open_fds", "Number of open file descriptors.")),
            maximumDescriptors: registry.makeGauge(descriptor: .named("process_max_fds", "Maximum number of open file descriptors.")),
            startTime: registry.makeGauge(
                descriptor: .named("process_start_time_seconds", "Start time of the process since the Unix epoch in seconds.")),
            cpuSecondsSeen: 0
        )
        gauges.withLockedValue { $0 = made }
    }

    /// Reads `/proc/self` into the gauges (cheap: three small procfs reads and a directory count),
    /// on a thread of its own.
    func sample() async {
        await reading.run { self.readSample() }
    }

    private func readSample() {
        guard let stat = Self.read("/proc/self/stat"), let close = stat.lastIndex(of: ")") else { return }
        // Fields after the command name, which may hold spaces: state is field 3.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 22, let user = Double(fields[11]), let system = Double(fields[12]), let startTicks = Double(fields[19]),
            let virtualBytes = Double(fields[20]), let residentPages = Double(fields[21])
        else { return }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        let bootTime = Self.read("/proc/stat")?.split(separator: "\n").first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6)) } ?? 0
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let descriptors = Self.countEntries("/proc/self/fd")
        gauges.withLockedValue { gauges in
            guard var current = gauges else { return }
            let cpu = (user + system) / ticks
            if cpu > current.cpuSecondsSeen {
                current.cpuSeconds.increment(by: cpu - current.cpuSecondsSeen)
                current.cpuSecondsSeen = cpu
            }
            current.residentBytes.set(residentPages * pageSize)
            current.virtualBytes.set(virtualBytes)
            current.openDescriptors.set(Double(descriptors))
            current.maximumDescriptors.set(Double(limit.rlim_cur))
            current.startTime.set(bootTime + startTicks / ticks)
            gauges = current
        }
    }

    private static func read(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { Glibc.close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, 4096) }
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func countEntries(_ path: String) -> Int {
        guard let directory = opendir(path) else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { count += 1 }
        }
        return max(0, count - 1)  // the directory stream's own descriptor
    }
}

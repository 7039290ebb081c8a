import Benchmark
import BenchmarkSupport
import Foundation
import RelayCore
import RelayLog

/// Durable appends to the write-ahead log against the same events in SQLite (WAL mode,
/// synchronous=FULL) — what an SDK-style persistent queue does — batch size by batch size.
///
/// One iteration is one batch, acknowledged only once durable, so the wall-clock percentiles are
/// ack latencies and events per second are throughput × batch size.
let benchmarks: @Sendable () -> Void = {
    appendBenchmarks()
    readAndRecoveryBenchmarks()
}

let appendBenchmarks: @Sendable () -> Void = {
    let batchSizes = [1, 10, 100, 1000]
    let events = GeneratedEvents.tracking(count: 1000)
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .custom("bytes per event", polarity: .prefersSmaller, useScalingFactor: false)],
        timeUnits: .microseconds,
        maxDuration: .seconds(3),
        maxIterations: 100_000
    )

    for size in batchSizes {
        let batch = Array(events.prefix(size))

        Benchmark("WAL durable append, batch \(size)", configuration: configuration) { benchmark, log in
            for _ in benchmark.scaledIterations {
                _ = try await log.append(batch)
            }
            let stats = await log.stats
            benchmark.measurement(.custom("bytes per event"), Int((Double(await log.dataBytes) / Double(max(stats.events, 1))).rounded()))
        } setup: {
            try await WriteAheadLog.open(dataDirectory: scratchDirectory("wal-\(size)"))
        }

        Benchmark("SQLite FULL insert, batch \(size) (baseline)", configuration: configuration) { benchmark, queue in
            for _ in benchmark.scaledIterations {
                try queue.append(batch)
            }
            try queue.checkpoint()
            benchmark.measurement(
                .custom("bytes per event"), Int((Double(DiskUsage.fileBytes(queue.path)) / Double(max(queue.appendedEvents, 1))).rounded()))
        } setup: {
            try SQLiteEventQueue(path: scratchDirectory("sqlite-\(size)") + "/queue.sqlite")
        }
    }
}

/// A fresh directory for one benchmark's files.
func scratchDirectory(_ name: String) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("campaign-relay-bench/\(name)-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

import Benchmark
import BenchmarkSupport
import Foundation
import Logging
import RelayAggregator
import RelayCore
import RelayLog

let quiet = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })

/// A log of `count` generated tracking events appended in batches of `batch`, closed.
func preparedLog(count: Int, batch: Int = 1000, segmentBytes: Int64 = 64 << 20) async throws -> String {
    let directory = scratchDirectory("prepared-\(count)")
    let log = try await WriteAheadLog.open(dataDirectory: directory, configuration: LogConfiguration(segmentBytes: segmentBytes), logger: quiet)
    let events = GeneratedEvents.tracking(count: count)
    for start in stride(from: 0, to: count, by: batch) {
        _ = try await log.append(Array(events[start..<min(start + batch, count)]))
    }
    await log.close()
    return directory
}

/// Reading the log back (what the aggregator, the uploader and replays do), recovery time on open
/// by segment size, aggregation into SQLite, and group commit under many concurrent appenders.
let readAndRecoveryBenchmarks: @Sendable () -> Void = {
    let timing = Benchmark.Configuration(metrics: [.wallClock, .throughput], timeUnits: .milliseconds, maxDuration: .seconds(5), maxIterations: 50)

    Benchmark("Log replay: read, decompress, decode 100,000 events", configuration: timing) { benchmark, directory in
        for _ in benchmark.scaledIterations {
            var reader = LogReader(walDirectory: directory + "/wal", from: 1)
            var total = 0
            while true {
                let batch = try reader.read(maximumEvents: 65_536)
                if batch.events.isEmpty { break }
                total += batch.events.count
            }
            reader.close()
            blackHole(total)
        }
    } setup: {
        try await preparedLog(count: 100_000)
    }

    for megabytes in [1, 16, 64] {
        Benchmark("Recovery: open a log whose active segment holds \(megabytes) MiB", configuration: timing) { benchmark, directory in
            for _ in benchmark.scaledIterations {
                let log = try await WriteAheadLog.open(
                    dataDirectory: directory, configuration: LogConfiguration(segmentBytes: 128 << 20), logger: quiet)
                blackHole(log.recoveryReport.verifiedBytes)
                await log.close()
            }
        } setup: {
            // Uncompressed frames, so the data size is what the events take (plus up to one
            // preallocation step of zeros, which recovery reads to know where the data ends).
            let directory = scratchDirectory("recovery-\(megabytes)")
            let log = try await WriteAheadLog.open(
                dataDirectory: directory, configuration: LogConfiguration(segmentBytes: 128 << 20, compressionLevel: 0), logger: quiet
            )
            let events = GeneratedEvents.tracking(count: 10_000)
            while await log.dataBytes < Int64(megabytes) << 20 { _ = try await log.append(events) }
            await log.close()
            return directory
        }
    }

    Benchmark("Aggregation: 100,000 events into a new SQLite database", configuration: timing) { benchmark, directory in
        for _ in benchmark.scaledIterations {
            let target = scratchDirectory("aggregate")
            try FileManager.default.createSymbolicLink(atPath: target + "/wal", withDestinationPath: directory + "/wal")
            let log = try await WriteAheadLog.open(dataDirectory: target, consumers: [Aggregator.consumer], logger: quiet)
            let aggregator = try await Aggregator(log: log, dataDirectory: target, logger: quiet)
            let summary = try await aggregator.catchUp()
            blackHole(summary.events)
            await aggregator.close()
            await log.close()
        }
    } setup: {
        try await preparedLog(count: 100_000)
    }

    Benchmark(
        "Group commit: 64 concurrent appenders of 1 event (ack latency)",
        configuration: .init(metrics: [.wallClock, .throughput], timeUnits: .microseconds, maxDuration: .seconds(3), maxIterations: 20_000)
    ) { benchmark, log in
        for _ in benchmark.scaledIterations {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<64 {
                    let event = GeneratedEvents.tracking(count: 1, seed: UInt64(index))
                    group.addTask { _ = try await log.append(event) }
                }
                try await group.waitForAll()
            }
        }
    } setup: {
        try await WriteAheadLog.open(dataDirectory: scratchDirectory("group"), logger: quiet)
    }
}

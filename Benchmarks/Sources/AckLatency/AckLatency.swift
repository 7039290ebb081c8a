import ArgumentParser
import BenchmarkSupport
import Foundation
import Logging
import RelayCore
import RelayLog

/// `AckLatency`: acknowledgement latency of durable appends at half load, write-ahead log against
/// the SQLite baseline in the same run.
///
/// For each batch size, each store is first saturated (closed loop, many concurrent appenders) to
/// find the most events per second it sustains; then batches are offered open-loop at half that
/// rate and every append's latency is measured from when it was due until it returned durable.
@main
struct AckLatency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ack latency (p50/p99/p99.9) of durable appends at half of each store's own maximum rate, WAL vs SQLite FULL."
    )

    @Option(help: "Seconds of each saturated and each paced phase.")
    var seconds = 5.0

    @Option(help: "Batch sizes (events per append), comma-separated.")
    var batches = "1,100"

    @Option(help: "Concurrent appenders while saturating.")
    var concurrency = 64

    @Option(help: "Fraction of the saturated rate offered in the paced phase.")
    var load = 0.5

    @Option(help: "Bytes of zeros the log writes ahead of its frames; 0 turns preallocation off.")
    var preallocationStep: Int64 = LogConfiguration().preallocationStep

    @Flag(help: "Print one JSON object per store and batch size instead of a table.")
    var json = false

    func run() async throws {
        let sizes = batches.split(separator: ",").compactMap { Int($0) }
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 > 0 }) else { throw ValidationError("--batches needs positive integers") }
        // Distinct events, far more than zlib's 32 KiB window holds, so frames compress as real traffic does.
        let pool = GeneratedEvents.tracking(count: 50_000)
        var rows: [Row] = []
        for size in sizes {
            let batches = stride(from: 0, to: pool.count - size + 1, by: size).map { Array(pool[$0..<($0 + size)]) }
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ack-latency-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: scratch) }

            let configuration = LogConfiguration(preallocateSegments: preallocationStep > 0, preallocationStep: max(1, preallocationStep))
            let log = try await WriteAheadLog.open(
                dataDirectory: scratch + "/wal", configuration: configuration,
                logger: Logger(label: "ack-latency", factory: { _ in SwiftLogNoOpLogHandler() })
            )
            let walLoad = Load(append: { _ = try await log.append(batches[$0 % batches.count]) }, batchSize: size)
            rows.append(try await measure("wal", walLoad, size))
            await log.close()

            let sqlite = try await SerializedSQLiteEventQueue(path: scratch + "/queue.sqlite")
            let sqliteLoad = Load(append: { try await sqlite.append(batches[$0 % batches.count]) }, batchSize: size)
            rows.append(try await measure("sqlite-full", sqliteLoad, size))
        }
        report(rows)
    }

    struct Row {
        var store: String
        var batch: Int
        var maximum: Double
        var offered: Double
        var achieved: Double
        var latency: LatencySummary
    }

    func measure(_ store: String, _ load: Load, _ size: Int) async throws -> Row {
        FileHandle.standardError.write(Data("\(store), batch \(size): saturating for \(seconds) s…\n".utf8))
        let maximum = try await load.saturate(concurrency: concurrency, seconds: seconds)
        let offered = maximum * self.load
        FileHandle.standardError.write(
            Data("\(store), batch \(size): \(Int(maximum)) events/s at most; offering \(Int(offered))/s for \(seconds) s…\n".utf8))
        let (latency, achieved) = try await load.paced(eventsPerSecond: offered, seconds: seconds)
        return Row(store: store, batch: size, maximum: maximum, offered: offered, achieved: achieved, latency: latency)
    }

    func report(_ rows: [Row]) {
        if json {
            for row in rows {
                let latency = row.latency
                print(
                    #"{"store":"\#(row.store)","batch":\#(row.batch),"maxEventsPerSecond":\#(Int(row.maximum)),"offeredEventsPerSecond":\#(Int(row.offered)),"#
                        + #""achievedEventsPerSecond":\#(Int(row.achieved)),"appends":\#(latency.count),"p50Ms":\#(rounded(latency.p50)),"p99Ms":\#(rounded(latency.p99)),"#
                        + #""p999Ms":\#(rounded(latency.p999)),"maxMs":\#(rounded(latency.max))}"#
                )
            }
            return
        }
        print("| store | batch | max events/s | offered at \(Int(load * 100)) % | ack p50 | p99 | p99.9 | max |")
        print("|---|---|---|---|---|---|---|---|")
        for row in rows {
            let latency = row.latency
            print(
                "| \(row.store) | \(row.batch) | \(Int(row.maximum)) | \(Int(row.achieved)) | \(ms(latency.p50)) | \(ms(latency.p99)) | \(ms(latency.p999)) | \(ms(latency.max)) |"
            )
        }
        for size in Set(rows.map(\.batch)).sorted() {
            guard let wal = rows.first(where: { $0.batch == size && $0.store == "wal" }),
                let sqlite = rows.first(where: { $0.batch == size && $0.store == "sqlite-full" })
            else { continue }
            print(
                "batch \(size): the WAL sustains \(String(format: "%.2f", wal.maximum / sqlite.maximum))× SQLite's events/s; at \(Int(load * 100)) % of "
                    + "each one's own maximum, ack p99 is \(ms(wal.latency.p99)) (WAL) against \(ms(sqlite.latency.p99)) (SQLite)"
            )
        }
    }

    func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
    func ms(_ value: Double) -> String { value < 1 ? String(format: "%.0f µs", value * 1000) : String(format: "%.2f ms", value) }
}

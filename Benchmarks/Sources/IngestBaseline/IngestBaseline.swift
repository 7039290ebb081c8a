import BenchmarkSupport
import RelayCore
import RelayEventJSON

#if canImport(Glibc)
    import Glibc
#endif

/// `IngestBaseline FILE DATABASE [BATCH_BYTES]`: what `campaign-relay ingest` does — read JSONL in
/// batches of about BATCH_BYTES (default 4 MiB, the relay's default), decode and validate each line
/// with the relay's own decoder, decoding ahead on the other core — but storing each batch in
/// SQLite (WAL mode, synchronous=FULL, one transaction per batch) instead of the write-ahead log.
/// Prints one JSON line: events, seconds, events per second, bytes on disk and bytes per event.
@main
enum IngestBaseline {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 3 else {
            print("usage: IngestBaseline FILE DATABASE [BATCH_BYTES]")
            exit(64)
        }
        let batchBytes = arguments.count > 3 ? Int(arguments[3]) ?? (4 << 20) : 4 << 20
        let bytes = try readFile(arguments[1])
        let queue = try await SerializedSQLiteEventQueue(path: arguments[2])
        let started = now()
        var inFlight: [Task<EventLines.Decoded, Never>] = []
        var stored = 0
        var start = 0
        var line = 1
        while start < bytes.count {
            var end = min(start + batchBytes, bytes.count)
            while end < bytes.count, bytes[end - 1] != 0x0A { end += 1 }
            let chunk = Array(bytes[start..<end])
            let firstLine = line
            line += chunk.count { $0 == 0x0A }
            let time = EventTime.now()
            inFlight.append(Task.detached { EventLines.decode(chunk, firstLine: firstLine, defaultTime: time) })
            if inFlight.count >= 3 {
                let decoded = await inFlight.removeFirst().value
                try await queue.append(decoded.events)
                stored += decoded.events.count
            }
            start = end
        }
        for task in inFlight {
            let decoded = await task.value
            try await queue.append(decoded.events)
            stored += decoded.events.count
        }
        let seconds = Double(now() - started) / 1e9
        try await queue.checkpoint()
        let disk = DiskUsage.fileBytes(arguments[2]) + DiskUsage.fileBytes(arguments[2] + "-wal")
        print(
            "{\"events\":\(stored),\"seconds\":\(seconds),\"eventsPerSecond\":\(Int(Double(stored) / seconds)),\"bytes\":\(disk),\"bytesPerEvent\":\(Double(disk) / Double(max(stored, 1)))}"
        )
    }

    static func readFile(_ path: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw Failure("cannot open \(path)") }
        defer { fclose(file) }
        fseek(file, 0, SEEK_END)
        let size = ftell(file)
        fseek(file, 0, SEEK_SET)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = fread(buffer.baseAddress, 1, size, file)
        }
    }

    static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

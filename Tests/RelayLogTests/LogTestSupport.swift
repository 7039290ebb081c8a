import RelayCore
import RelayTestSupport

@testable import RelayLog

/// Reads every event of the log in `dataDirectory` from `position` on.
func readAll(_ dataDirectory: String, fileSystem: any FileSystem, from position: UInt64 = 1) throws -> (events: [SequencedEvent], damage: [LogDamage])
{
    var reader = LogReader(walDirectory: LogLayout(dataDirectory: dataDirectory).walDirectory, fileSystem: fileSystem, from: position)
    var events: [SequencedEvent] = []
    var damage: [LogDamage] = []
    while true {
        let batch = try reader.read(maximumEvents: 10_000)
        damage += batch.damage
        if batch.events.isEmpty { break }
        events += batch.events
    }
    return (events, damage)
}

/// Offsets of the frames of a segment's bytes, up to the first byte that does not start a frame header.
func frameStartOffsets(_ bytes: [UInt8]) -> [Int] {
    var offset = SegmentHeader.size
    var starts: [Int] = []
    while offset + FrameHeader.size <= bytes.count,
        case .success(let header) = bytes[offset..<(offset + FrameHeader.size)].withUnsafeBufferPointer({ FrameHeader.decode($0) })
    {
        starts.append(offset)
        offset += header.frameSize
    }
    return starts
}

/// Appends each of `batches` from a task of its own, so that they share group commits; returns
/// each batch's index with what its append returned, in the order they finished.
func appendConcurrently(_ batches: [[Event]], to log: WriteAheadLog) async -> [(Int, Result<Range<UInt64>, LogError>)] {
    await withTaskGroup(of: (Int, Result<Range<UInt64>, LogError>).self) { group in
        for (index, batch) in batches.enumerated() {
            group.addTask {
                do throws(LogError) { return (index, .success(try await log.append(batch))) } catch { return (index, .failure(error)) }
            }
        }
        var collected: [(Int, Result<Range<UInt64>, LogError>)] = []
        for await result in group { collected.append(result) }
        return collected
    }
}

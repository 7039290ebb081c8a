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

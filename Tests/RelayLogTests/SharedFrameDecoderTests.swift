import Foundation
import Logging
import NIOConcurrencyHelpers
import RelayCore
import RelayEventJSON
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog

/// The consumer layer's read side: a frame read by several consumers of one log is decoded once,
/// a consumer far behind decodes alone, and damage is reported once for all of them.
@Suite("Shared frame decoder", .tier(.fast))
struct SharedFrameDecoderTests {
    /// Three consumers, as `serve` with both Campaign hosts declares them.
    static let consumers: [LogConsumerDeclaration] = [.ownStore("aggregator"), .cursorFile("upload-tracking"), .cursorFile("upload-marketing")]

    /// Writes `batches` appends of 100 events (one frame each) to a log of `consumers` and returns the open log.
    func filledLog(
        _ directory: String, batches: Int, consumers: [LogConsumerDeclaration] = consumers, logger: Logger = quietLogger
    ) async throws -> WriteAheadLog {
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: consumers, logger: logger)
        for batch in 0..<batches {
            _ = try await log.append((1...100).map { TestEvents.tracking(Int64(batch * 100) + $0) })
        }
        return log
    }

    /// Every event a reader gives from `position`, in batches of `batchSize`.
    func drain(_ reader: some FrameReader, batchSize: Int, below limit: UInt64) throws -> [SequencedEvent] {
        var reader = reader
        defer { reader.close() }
        var events: [SequencedEvent] = []
        while true {
            let batch = try reader.read(maximumEvents: batchSize, below: limit)
            if batch.events.isEmpty { break }
            events += batch.events
        }
        return events
    }

    @Test("three consumers of one log read 30 frames: each frame decoded once, 60 reads shared, the events those of a reader of its own")
    func threeConsumersDecodeOnce() async throws {
        let directory = temporaryDirectory("shared-decode")
        defer { removeTree(directory) }
        let log = try await filledLog(directory, batches: 30)
        let end = await log.durableSequence
        let alone = try readAll(directory, fileSystem: PosixFileSystem()).events
        #expect(alone.count == 3000)
        // Different batch sizes, so the consumers stop in different places of the same frames.
        let read = try [37, 100, 4096].map { try drain(log.reader(from: 1), batchSize: $0, below: end) }
        for events in read {
            #expect(events.map(\.sequence) == alone.map(\.sequence))
            #expect(events.map(\.event) == alone.map(\.event))
        }
        let figures = log.sharedDecoder.figures
        #expect(figures.decoded == 30)
        #expect(figures.shared == 60)
        await log.close()
    }

    @Test("a log with one consumer keeps no decoded frame: its reader decodes each frame itself, as it reads each once")
    func oneConsumerKeepsNothing() async throws {
        let directory = temporaryDirectory("shared-single")
        defer { removeTree(directory) }
        let log = try await filledLog(directory, batches: 5, consumers: [.ownStore("aggregator")])
        let end = await log.durableSequence
        #expect(log.sharedDecoder.capacity == 0)
        #expect(try drain(log.reader(from: 1), batchSize: 1000, below: end).count == 500)
        #expect(try drain(log.reader(from: 1), batchSize: 1000, below: end).count == 500)
        #expect(log.sharedDecoder.figures == (decoded: 0, shared: 0, written: 0))
        await log.close()
    }

    @Test("readers on four threads at once: every frame decoded once, every reader gets all 2,000 events")
    func concurrentReadersWaitForOneDecoding() async throws {
        let directory = temporaryDirectory("shared-concurrent")
        defer { removeTree(directory) }
        let log = try await filledLog(directory, batches: 20)
        let end = await log.durableSequence
        let alone = try readAll(directory, fileSystem: PosixFileSystem()).events
        let results = NIOLockedValueBox<[[SequencedEvent]]>([])
        let threads = (0..<4).map { _ in
            let reader = log.reader(from: 1)
            return Thread {
                let events = (try? drain(reader, batchSize: 50, below: end)) ?? []
                results.withLockedValue { $0.append(events) }
            }
        }
        for thread in threads { thread.start() }
        try await waitFor("four readers to finish") { results.withLockedValue { $0.count } == 4 }
        for events in results.withLockedValue({ $0 }) {
            #expect(events.map(\.event) == alone.map(\.event))
        }
        let figures = log.sharedDecoder.figures
        #expect(figures.decoded == 20)
        #expect(figures.shared == 60)
        await log.close()
    }

    @Test("with its memory full, a reader behind every frame kept decodes alone, and the newest frames stay shared")
    func laggardReadsAlone() async throws {
        let directory = temporaryDirectory("shared-laggard")
        defer { removeTree(directory) }
        let log = try await filledLog(directory, batches: 10)
        await log.close()
        let decoder = SharedFrameDecoder(capacity: 300, logger: quietLogger)
        func reader(from position: UInt64) -> LogReader {
            LogReader(
                walDirectory: LogLayout(dataDirectory: directory).walDirectory, archiveDirectory: nil, fileSystem: PosixFileSystem(), from: position,
                keys: nil, sharedDecoder: decoder, damageLogger: nil)
        }
        // The leader reads 10 frames of 100 events to the end: the newest 300 events stay (frames 8 to 10).
        #expect(try drain(reader(from: 1), batchSize: 1000, below: 1001).count == 1000)
        #expect(decoder.figures == (decoded: 10, shared: 0, written: 0))
        // A follower within them shares the three frames.
        #expect(try drain(reader(from: 701), batchSize: 1000, below: 1001).count == 300)
        #expect(decoder.figures == (decoded: 10, shared: 3, written: 0))
        // A follower far behind decodes frames 1 to 7 alone, keeping none of them, so frames 8 to
        // 10 are still there for it to share.
        #expect(try drain(reader(from: 1), batchSize: 1000, below: 1001).count == 1000)
        #expect(decoder.figures == (decoded: 17, shared: 6, written: 0))
    }

    @Test("damage three consumers pass over is logged once, and each consumer still learns of it")
    func damageReportedOnce() async throws {
        let directory = temporaryDirectory("shared-damage")
        defer { removeTree(directory) }
        let first = try await filledLog(directory, batches: 5)
        await first.close()
        let wal = LogLayout(dataDirectory: directory).walDirectory
        let fileSystem = PosixFileSystem()
        let segment = try #require(try fileSystem.listDirectory(wal).filter { $0.hasSuffix(".wal") }.sorted().first)
        // The third frame's payload: flipped after the log was opened, as a bit rots under a running relay.
        let lines = CapturedLogRecords()
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: Logger(label: "test") { _ in lines })
        let starts = try frameStartOffsets(fileSystem.readFile("\(wal)/\(segment)")).map { Int64($0) }
        let handle = try fileSystem.open("\(wal)/\(segment)", create: false)
        var byte = try handle.read(at: starts[2] + Int64(FrameHeader.size) + 7, count: 1)
        byte[0] ^= 0x10
        try handle.write(byte, at: starts[2] + Int64(FrameHeader.size) + 7)
        handle.close()
        let end = await log.durableSequence
        for _ in 0..<3 {
            var reader = log.reader(from: 1)
            var damage: [LogDamage] = []
            var events = 0
            while true {
                let batch = try reader.read(maximumEvents: 1000, below: end)
                damage += batch.damage
                if batch.events.isEmpty { break }
                events += batch.events.count
            }
            reader.close()
            #expect(events == 400)
            #expect(damage.map(\.kind) == [.corruptFrame])
        }
        let reported = lines.messages.filter { $0.hasPrefix("skipping damaged log bytes") }
        #expect(reported.count == 1, "\(reported)")
        await log.close()
    }
}

extension SharedFrameDecoderTests {
    @Test("a log keeping its written events hands them to its one consumer without decoding: the events a reader of its own decodes from disk")
    func writtenEventsNeedNoDecoding() async throws {
        let directory = temporaryDirectory("shared-written")
        defer { removeTree(directory) }
        var configuration = LogConfiguration()
        configuration.writtenEventsKept = 10_000
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: configuration, consumers: [.ownStore("aggregator")], logger: quietLogger)
        // Every shape the encoding has (request identities, chains, copies, SDK registrations, hex
        // ids), in appends of different sizes, one of them split over two frames.
        let shapes = try EventBinaryCodecTests.events()
        let appends = [shapes, (1...5_000).map { TestEvents.tracking($0) }, shapes + shapes]
        for events in appends { _ = try await log.append(events) }
        let end = await log.durableSequence
        let read = try drain(log.reader(from: 1), batchSize: 333, below: end)
        await log.close()
        let fromDisk = try readAll(directory, fileSystem: PosixFileSystem()).events
        #expect(read.count == appends.joined().count)
        #expect(read.map(\.sequence) == fromDisk.map(\.sequence))
        #expect(read.map(\.event) == fromDisk.map(\.event))
        #expect(read.map { EventEncoder.json($0.event) } == fromDisk.map { EventEncoder.json($0.event) })
        let figures = log.sharedDecoder.figures
        #expect(figures.decoded == 0)
        #expect(figures.written == 4, "one frame per append, and the 5,000 events in two")
        #expect(figures.shared == 4)
    }

    @Test("written events past what the log keeps are decoded from disk; the newest frame is still taken as written")
    func writtenEventsBeyondCapacityAreDecoded() async throws {
        let directory = temporaryDirectory("shared-written-full")
        defer { removeTree(directory) }
        var configuration = LogConfiguration()
        configuration.writtenEventsKept = 150
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: configuration, consumers: [.ownStore("aggregator")], logger: quietLogger)
        for batch in 0..<10 { _ = try await log.append((1...100).map { TestEvents.tracking(Int64(batch * 100) + $0) }) }
        let end = await log.durableSequence
        let read = try drain(log.reader(from: 1), batchSize: 1000, below: end)
        await log.close()
        #expect(read.map(\.event) == (try readAll(directory, fileSystem: PosixFileSystem()).events.map(\.event)))
        #expect(log.sharedDecoder.figures == (decoded: 9, shared: 1, written: 10))
    }
}

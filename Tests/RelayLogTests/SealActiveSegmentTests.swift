import Foundation
import RelayCore
import RelayTestSupport
import Synchronization
import TestTiers
import Testing

@testable import RelayLog

/// ``WriteAheadLog/sealActiveSegment()``: what an erasure rewrites must be in segments no commit
/// writes to again, and sealing must not wait for a log under constant load to fall idle.
@Suite("Sealing the active segment", .tier(.fast))
struct SealActiveSegmentTests {
    /// What the appenders and the test share.
    final class Shared: Sendable {
        let stopping = Atomic<Bool>(false)
        let appended = Mutex<[Range<UInt64>]>([])
    }

    @Test("under appends that never stop, the seal returns, and every later event is in a later segment")
    func sealsUnderConstantLoad() async throws {
        let directory = temporaryDirectory("seal-active")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        _ = try await log.append((1...10).map { TestEvents.tracking($0) })
        let shared = Shared()
        // Four appenders, each appending again as soon as its last append is durable: the writer
        // always has a commit under way or queued.
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for appender in 0..<4 {
                    group.addTask {
                        var next = Int64(1_000 + appender * 1_000_000)
                        while !shared.stopping.load(ordering: .relaxed) {
                            guard let range = try? await log.append((0..<20).map { TestEvents.tracking(next + $0) }) else { return }
                            shared.appended.withLock { $0.append(range) }
                            next += 20
                        }
                    }
                }
            }
        }
        while shared.appended.withLock({ $0.count }) < 20 { try await Task.sleep(for: .milliseconds(1)) }
        let segmentsBefore = await log.segmentCount
        let boundary = await log.sealActiveSegment()
        // Once more appends are durable after the seal, they went to a new segment.
        let seen = shared.appended.withLock { $0.count }
        while shared.appended.withLock({ $0.count }) < seen + 20 { try await Task.sleep(for: .milliseconds(1)) }
        shared.stopping.store(true, ordering: .relaxed)
        await load.value
        let ranges = shared.appended.withLock { $0 }
        #expect(ranges.allSatisfy { $0.upperBound <= boundary || $0.lowerBound >= boundary }, "no append straddles the boundary")
        #expect(ranges.contains { $0.lowerBound >= boundary }, "appends went on after the seal")
        #expect(await log.segmentCount > segmentsBefore, "the next commit started a new segment")
        let starts = try PosixFileSystem().listDirectory(LogLayout(dataDirectory: directory).walDirectory)
            .compactMap(SegmentHeader.firstSequence(fromFileName:))
        #expect(starts.contains { $0 >= boundary }, "a segment starts at or after the boundary: \(starts.sorted()), boundary \(boundary)")
        await log.close()
    }

    @Test("an idle log seals at once; sealing an empty segment does nothing")
    func sealsIdleLog() async throws {
        let directory = temporaryDirectory("seal-idle")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        #expect(await log.sealActiveSegment() == 1)
        _ = try await log.append([TestEvents.tracking(1)])
        #expect(await log.segmentCount == 1, "an empty segment sealed is not rolled")
        #expect(await log.sealActiveSegment() == 2)
        _ = try await log.append([TestEvents.tracking(2)])
        #expect(await log.segmentCount == 2, "the commit after a seal starts a new segment")
        await log.close()
    }
}

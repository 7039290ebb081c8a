import Foundation
import RelayCore
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog
@testable import RelayPostgres

/// Retention on the log kept in PostgreSQL: frames are grouped in spans of about
/// `--segment-bytes`, and a span every consumer has passed leaves the table whole, never the newest;
/// readers then start at the first event kept, and a reopened stream goes on where it was.
@Suite("Retention of the log kept in PostgreSQL", .timeLimit(.minutes(5)), .tier(.thorough))
struct PostgresLogRetentionTests {
    typealias Fixture = PostgresLogFixture

    @Test("spans every consumer passed are deleted whole, oldest first, never the newest; reading starts at the first kept")
    func passedSpansLeave() async throws {
        try await Fixture.withCluster { postgres in
            // Stored uncompressed in 64 KiB spans (the store's smallest), deleted as soon as passed.
            let configuration = LogConfiguration(
                segmentBytes: 64 << 10, compressionLevel: 0, preallocateSegments: false, retention: LogRetention(age: .zero, bytes: nil))
            let log = try await Fixture.open(postgres, stream: "kept", configuration: configuration, consumers: [.cursorFile("lane")])
            for batch in 0..<10 {
                let first = Int64(batch * 1000 + 1)
                #expect(try await log.append(Fixture.events(first...(first + 999))) == UInt64(first)..<UInt64(first + 1000))
            }
            let before = try await Fixture.rows(postgres, stream: "kept")
            let spansBefore = Set(before.map(\.span))
            #expect(spansBefore.count >= 3, "\(before)")
            #expect(before.map(\.firstSequence).min() == 1)

            // The lane passes everything but the newest span's events.
            let newest = try #require(spansBefore.max())
            let newestFirst = try #require(before.filter { $0.span == newest }.map(\.firstSequence).min())
            try await log.commitCursor("lane", to: 10_001)
            try await Fixture.waitFor("the passed spans to leave") {
                Set(try await Fixture.rows(postgres, stream: "kept").map(\.span)) == [newest]
            }
            let after = try await Fixture.rows(postgres, stream: "kept")
            // Whole spans left: the newest is there complete, up to the durable end.
            #expect(after == before.filter { $0.span == newest })
            #expect(after.map { $0.firstSequence + UInt64($0.eventCount) }.max() == 10_001)
            #expect(await log.oldestSequence == newestFirst)

            // A reader asked for sequence 1 starts at the first event kept.
            let read = try await Fixture.read(log, from: 1, below: 10_001)
            #expect(read.events.map(\.sequence) == Array(newestFirst..<10_001))
            #expect(read.events.map { Fixture.id(of: $0.event) } == (Int64(newestFirst)...10_000).map { Optional($0) })
            await log.close()

            // Reopened: the durable end and the kept span are as they were, and numbering goes on.
            let again = try await Fixture.open(postgres, stream: "kept", configuration: configuration, consumers: [.cursorFile("lane")])
            #expect(await again.durableSequence == 10_001)
            #expect(await again.oldestSequence == newestFirst)
            #expect(try await again.append(Fixture.events(10_001...10_005)) == 10_001..<10_006)
            await again.close()
        }
    }
}

import Foundation
import RelayCore
import RelayIO
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog
@testable import RelayPostgres

/// The write-ahead log kept in PostgreSQL (`--log-postgres-url`), driven in-process against a
/// throw-away cluster: what is appended comes back, in the segment files' frame format, one INSERT
/// per group commit; a reopened stream goes on where it was; a second writer fences the first out;
/// a commit that landed after its answer was lost is kept and numbered past.
@Suite("The log kept in PostgreSQL", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
struct PostgresLogTests {
    typealias Fixture = PostgresLogFixture

    /// Four appends, one after another: each is a group commit of its own, the third of 5000
    /// events, which takes two frames (4096 events at most in one).
    static let batches: [[Event]] = [
        Fixture.events(1...1), Fixture.events(2...11), Fixture.events(12...5011), Fixture.events(5012...5013),
    ]

    @Test("a round trip: what is appended is read back under its sequences, in rows whose frames are the segment file's, one INSERT per commit")
    func roundTrip() async throws {
        try await Fixture.withCluster { postgres in
            try await Fixture.countStatements(postgres)
            let log = try await Fixture.open(postgres, stream: "s1")
            #expect(await log.durableSequence == 1)
            var ranges: [Range<UInt64>] = []
            for batch in Self.batches { ranges.append(try await log.append(batch)) }
            #expect(ranges == [1..<2, 2..<12, 12..<5012, 5012..<5014])
            #expect(await log.durableSequence == 5014)
            let read = try await Fixture.read(log, below: await log.durableSequence)
            #expect(read.damage.isEmpty)
            #expect(read.events.map(\.sequence) == Array(1..<5014))
            #expect(read.events.map(\.event) == Self.batches.flatMap { $0 })

            // Each row is a frame as the codec encodes the commit's group: the same bytes.
            let rows = try await Fixture.rows(postgres, stream: "s1")
            let codec = FrameRecordCodec(configuration: Fixture.configuration)
            var expected: [FrameRecord] = []
            for (batch, range) in zip(Self.batches, ranges) {
                expected += try codec.encode(FrameGroup(batches: [batch], firstSequence: range.lowerBound, tallyingTenants: false)).records
            }
            #expect(rows.map { FrameRecord(firstSequence: $0.firstSequence, eventCount: $0.eventCount, bytes: $0.frame) } == expected)
            #expect(rows.map(\.eventCount) == [1, 10, 4096, 904, 2])
            // Far below a span's megabyte: one span.
            #expect(Set(rows.map(\.span)) == [1])

            // And the segment file a file log writes for the same appends holds the same frames,
            // one after another, after its header.
            let directory = temporaryDirectory("postgres-log-segment")
            defer { removeTree(directory) }
            let fileLog = try await WriteAheadLog.open(dataDirectory: directory, configuration: Fixture.configuration, logger: quietLogger)
            for batch in Self.batches { _ = try await fileLog.append(batch) }
            await fileLog.close()
            let path = "\(LogLayout(dataDirectory: directory).walDirectory)/\(SegmentHeader.fileName(firstSequence: 1))"
            let segment = try await Fixture.readers.run { () throws(any Error) -> [UInt8] in Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
            #expect(Array(segment.dropFirst(SegmentHeader.size)) == rows.flatMap(\.frame))

            // One INSERT per group commit, counted by the database; each commit one transaction.
            #expect(try await Fixture.frameInserts(postgres) == 4)
            #expect(await log.stats.commits == 4)
            let concurrent = await withTaskGroup(of: Bool.self) { group in
                for task in 0..<20 {
                    let first = Int64(10_000 + task * 5)
                    group.addTask { (try? await log.append(Fixture.events(first...(first + 4)))) != nil }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(concurrent == 20)
            let commits = await log.stats.commits
            #expect(try await Fixture.frameInserts(postgres) == commits)
            let transactions = try await postgres.psql("SELECT count(DISTINCT xmin::text) FROM relay_log_frames WHERE stream = 's1'")
            #expect(transactions == "\(commits)")
            await log.close()
        }
    }

    @Test("a stream reopened goes on where it was: its durable end, its cursors, its events")
    func reopen() async throws {
        try await Fixture.withCluster { postgres in
            let consumers: [LogConsumerDeclaration] = [.cursorFile("lane"), .ownStore("counts")]
            let first = try await Fixture.open(postgres, stream: "s1", consumers: consumers)
            #expect(await first.cursorPositionsByName == ["lane": 1, "counts": 1])
            #expect(try await first.append(Fixture.events(1...30)) == 1..<31)
            try await first.commitCursor("lane", to: 12)
            try await first.commitCursor("counts", to: 25)
            await first.close()
            let cursors = try await postgres.psql("SELECT consumer || '=' || position FROM relay_log_cursors WHERE stream = 's1' ORDER BY consumer")
            #expect(cursors == "counts=25\nlane=12")

            let again = try await Fixture.open(postgres, stream: "s1", consumers: consumers)
            #expect(await again.durableSequence == 31)
            #expect(await again.cursorPositionsByName == ["lane": 12, "counts": 25])
            #expect(try await again.startPosition(of: "lane") == 12)
            #expect(try await again.append(Fixture.events(31...35)) == 31..<36)
            let read = try await Fixture.read(again, below: await again.durableSequence)
            #expect(read.events.map(\.sequence) == Array(1..<36))
            #expect(read.events.map { Fixture.id(of: $0.event) } == (1...35).map { Optional($0) })
            await again.close()
        }
    }

    @Test("an encrypted stream round trips across a reopen; its rows hold no event in plain text, where a clear stream's do")
    func encryptedRoundTrip() async throws {
        try await Fixture.withCluster { postgres in
            let ring = try LogKeyFile.parse("k1:\(Data(TestKeys.bytes("postgres-log")).base64EncodedString())\n", path: "test-keys")
            // Stored uncompressed, so that the plain text would be in the row if not sealed.
            var sealed = LogConfiguration(compressionLevel: 0, preallocateSegments: false)
            sealed.encryption = ring
            let marker = "plain-text-delivery-0190"
            let writer = try await Fixture.open(postgres, stream: "sealed", configuration: sealed)
            #expect(try await writer.append(Fixture.events(1...40, delivery: marker)) == 1..<41)
            await writer.close()
            let reader = try await Fixture.open(postgres, stream: "sealed", configuration: sealed)
            #expect(await reader.durableSequence == 41)
            let read = try await Fixture.read(reader, below: 41)
            #expect(read.events.map(\.event) == Fixture.events(1...40, delivery: marker))
            await reader.close()
            let sealedRows = try await Fixture.rows(postgres, stream: "sealed")
            #expect(sealedRows.count == 1)
            #expect(!sealedRows.contains { $0.frame.contains(utf8: marker) })

            // The control: the same events in the clear are in the row as they were sent.
            let clear = try await Fixture.open(
                postgres, stream: "clear", configuration: LogConfiguration(compressionLevel: 0, preallocateSegments: false))
            _ = try await clear.append(Fixture.events(1...40, delivery: marker))
            await clear.close()
            #expect(try await Fixture.rows(postgres, stream: "clear").contains { $0.frame.contains(utf8: marker) })

            // Without the key, the sealed stream is not read as anything else.
            let keyless = try await Fixture.open(postgres, stream: "sealed")
            await #expect(throws: LogError.self) { try await Fixture.read(keyless, below: 41) }
            await keyless.close()
        }
    }

    @Test(
        "a reader over more frames than one query fetches, single events and frames of thousands, returns each event once, in order, whatever its batch and limit"
    )
    func readerOverManyFrames() async throws {
        try await Fixture.withCluster { postgres in
            let log = try await Fixture.open(postgres, stream: "s1")
            // 40 frames of one event: more than the 16 the reader fetches per query.
            for id in Int64(1)...40 { _ = try await log.append([Fixture.event(id)]) }
            #expect(try await log.append(Fixture.events(41...5040)) == 41..<5041)
            #expect(try await log.append(Fixture.events(5041...14040)) == 5041..<14041)
            for id in Int64(14041)...14060 { _ = try await log.append([Fixture.event(id)]) }
            let end = await log.durableSequence
            #expect(end == 14061)
            let rows = try await Fixture.rows(postgres, stream: "s1")
            #expect(rows.map(\.eventCount) == Array(repeating: 1, count: 40) + [4096, 904, 4096, 4096, 808] + Array(repeating: 1, count: 20))

            for maximumEvents in [1, 7, 1000, 20_000] {
                let read = try await Fixture.read(log, below: end, maximumEvents: maximumEvents)
                #expect(read.damage.isEmpty)
                #expect(read.events.map(\.sequence) == Array(1..<end), "\(maximumEvents) per read")
                #expect(read.events.map { Fixture.id(of: $0.event) } == (Int64(1)..<Int64(end)).map { Optional($0) }, "\(maximumEvents) per read")
            }
            // From inside the single frames, inside a big frame, and at the last event.
            for start in [UInt64(17), 33, 41, 2000, 9137, 14060] {
                let read = try await Fixture.read(log, from: start, below: end, maximumEvents: 333)
                #expect(read.events.map(\.sequence) == Array(start..<end), "from \(start)")
            }
            // A follower whose limit moves: it stops inside a frame and later goes on from there.
            let limits: [UInt64] = [5, 30, 41, 2000, 4137, 5041, 9000, 14045, end]
            let follower = try await Fixture.read(log, from: 3, below: limits, maximumEvents: 500)
            #expect(follower.events.map(\.sequence) == Array(3..<end))
            await log.close()
        }
    }

    @Test("a second process opening the same stream takes its writer generation: the first's appends fail for good, the second's go on")
    func writerFencing() async throws {
        try await Fixture.withCluster { postgres in
            let first = try await Fixture.open(postgres, stream: "s1")
            #expect(try await first.append(Fixture.events(1...10)) == 1..<11)
            let second = try await Fixture.open(postgres, stream: "s1")
            #expect(await second.durableSequence == 11)
            #expect(try await postgres.psql("SELECT writer FROM relay_log_streams WHERE stream = 's1'") == "2")

            let refused = try await Fixture.storeUnavailable { () async throws(LogError) in try await first.append(Fixture.events(100...104)) }
            #expect(refused.contains("another process opened stream s1 as its writer"), "\(refused)")
            #expect(try await second.append(Fixture.events(11...20)) == 11..<21)
            // Once fenced out, always: even after the second's commit.
            let again = try await Fixture.storeUnavailable { () async throws(LogError) in try await first.append(Fixture.events(105...105)) }
            #expect(again.contains("another process opened stream s1 as its writer"), "\(again)")
            #expect(await first.durableSequence == 11)

            let read = try await Fixture.read(second, below: await second.durableSequence)
            #expect(read.events.map { Fixture.id(of: $0.event) } == (Int64(1)...20).map { Optional($0) })
            #expect(try await Fixture.rows(postgres, stream: "s1").map(\.firstSequence) == [1, 11])
            await first.close()
            await second.close()
        }
    }

    /// libpq's multi-host form against real servers: a port where nothing listens, a server in
    /// recovery (a standby: `standby.signal`, no primary to follow), and a writable primary.
    @Test("a multi-host URL: a host that refuses and a standby are passed over for the writable primary; with any, the first that answers is taken")
    func multiHostOpen() async throws {
        try await Fixture.withCluster { standby in
            try await Fixture.withCluster { primary in
                try await standby.stop()
                try await Fixture.readers.run { () throws(any Error) in
                    try Data().write(to: URL(fileURLWithPath: "\(standby.root)/data/standby.signal"))
                }
                try await standby.resume()
                #expect(try await standby.psql("SELECT pg_is_in_recovery()") == "t")
                let hosts = "127.0.0.1:1,127.0.0.1:\(standby.port),127.0.0.1:\(primary.port)"
                let location = try PostgresLocation(
                    url: "postgres://postgres@\(hosts)/postgres?sslmode=disable&target_session_attrs=read-write", option: "--log-postgres-url")
                let log = try await PostgresLog.open(
                    location: location, stream: "s1", newRelayID: "relay-s1", configuration: Fixture.configuration, consumers: [], fenced: [],
                    fence: StreamLeaseFence(), readOnly: false, walDirectory: temporaryDirectory("postgres-log-hosts"), logger: quietLogger
                ).log
                #expect(try await log.append(Fixture.events(1...5)) == 1..<6)
                await log.close()
                #expect(try await Fixture.rows(primary, stream: "s1").map(\.firstSequence) == [1])
                #expect(try await standby.psql("SELECT to_regclass('relay_log_frames') IS NULL") == "t")

                // Only hosts that will not do: each is named with its reason.
                let none = try PostgresLocation(
                    url: "postgres://postgres@127.0.0.1:1,127.0.0.1:\(standby.port)/postgres?sslmode=disable", option: "--log-postgres-url")
                let refused = try await #require(throws: LogError.self) {
                    _ = try await PostgresLog.open(
                        location: none, stream: "s1", newRelayID: "relay-s1", configuration: Fixture.configuration, consumers: [], fenced: [],
                        fence: StreamLeaseFence(), readOnly: false, walDirectory: temporaryDirectory("postgres-log-hosts"), logger: quietLogger)
                }
                let text = "\(refused)"
                #expect(text.contains("cannot connect to a writable primary"), "\(text)")
                #expect(text.contains("127.0.0.1:1: "), "\(text)")
                #expect(text.contains("127.0.0.1:\(standby.port): a standby (in recovery), not a writable primary"), "\(text)")

                // With any, the standby answers first and is taken: the log cannot make its tables there.
                let any = try PostgresLocation(
                    url: "postgres://postgres@\(hosts)/postgres?sslmode=disable&target_session_attrs=any", option: "--log-postgres-url")
                let readOnly = try await #require(throws: LogError.self) {
                    _ = try await PostgresLog.open(
                        location: any, stream: "s1", newRelayID: "relay-s1", configuration: Fixture.configuration, consumers: [], fenced: [],
                        fence: StreamLeaseFence(), readOnly: false, walDirectory: temporaryDirectory("postgres-log-hosts"), logger: quietLogger)
                }
                #expect("\(readOnly)".contains("read-only transaction"), "\(readOnly)")
            }
        }
    }

    /// The server closed the store's connection while the log was idle (a restart, a failover,
    /// an administrator's pg_terminate_backend): the next append is the first to use it.
    @Test("an append after the database restarted while the log was idle is stored, on a new connection")
    func appendAfterRestart() async throws {
        try await Fixture.withCluster { postgres in
            let log = try await Fixture.open(postgres, stream: "s1")
            #expect(try await log.append(Fixture.events(1...10)) == 1..<11)
            try await postgres.restartImmediately()
            // PostgresNIO leaves a query on a connection the server closed unanswered, so the link
            // must not hand it out again: the append would wait out its 5 s deadline and fail.
            #expect(try await log.append(Fixture.events(11...15)) == 11..<16)
            #expect(try await log.append(Fixture.events(16...20)) == 16..<21)
            let read = try await Fixture.read(log, below: await log.durableSequence)
            #expect(read.events.map { Fixture.id(of: $0.event) } == (Int64(1)...20).map { Optional($0) })
            await log.close()
        }
    }

    @Test("a commit that landed though its answer was lost: the next append fails and the log numbers past its events, which readers see once")
    func commitLandedAfterAll() async throws {
        try await Fixture.withCluster { postgres in
            let log = try await Fixture.open(postgres, stream: "s1")
            #expect(try await log.append(Fixture.events(1...10)) == 1..<11)
            let durable = await log.durableSequence
            #expect(durable == 11)

            // A commit of events 11..<16 that landed while its connection broke: its row is there,
            // and the store's connection is gone.
            let landed = Fixture.events(500...504)
            let records = try FrameRecordCodec(configuration: Fixture.configuration).encode(
                FrameGroup(batches: [landed], firstSequence: durable, tallyingTenants: false)
            ).records
            #expect(records.count == 1)
            for record in records { try await Fixture.insert(record, stream: "s1", span: 1, into: postgres) }
            _ = try await postgres.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'campaign-relay'")
            try await Fixture.waitFor("the relay's connections to end") {
                try await postgres.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'campaign-relay'") == "0"
            }

            // The append on the broken connection fails: nothing acknowledged.
            _ = try await Fixture.storeUnavailable { () async throws(LogError) in try await log.append(Fixture.events(600...601)) }
            #expect(await log.durableSequence == durable)
            // The next looks first, finds the landed events, fails once more, and the log skips them.
            let found = try await Fixture.storeUnavailable { () async throws(LogError) in try await log.append(Fixture.events(700...701)) }
            #expect(found.contains("events 11..<16 of a commit whose answer was lost are in the database after all"), "\(found)")
            #expect(await log.durableSequence == 16)
            #expect(try await log.append(Fixture.events(800...802)) == 16..<19)

            let read = try await Fixture.read(log, below: await log.durableSequence)
            #expect(read.events.map(\.sequence) == Array(1..<19))
            #expect(read.events.map { Fixture.id(of: $0.event) } == (Array(1...10) + Array(500...504) + Array(800...802)).map { Optional(Int64($0)) })
            #expect(try await Fixture.rows(postgres, stream: "s1").map(\.firstSequence) == [1, 11, 16])
            await log.close()
        }
    }
}

import NIOConcurrencyHelpers
import RelayLog
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayPostgres

/// The forwarding leases of the streams of one log database (``StreamLeases``), driven round by
/// round against a throw-away cluster: each relay holds its own stream's lease, a relay whose
/// heartbeat went stale has its stream adopted, its cursor writes are then refused, and it gets
/// the stream back once it is alive again.
@Suite("Forwarding leases of the log kept in PostgreSQL", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
struct StreamLeasesTests {
    typealias Fixture = PostgresLogFixture

    /// `stream`'s lease as the database has it: `holder token`.
    static func lease(_ stream: String, _ postgres: TestPostgres) async throws -> String {
        try await postgres.psql("SELECT holder || ' ' || token FROM relay_log_leases WHERE stream = '\(stream)'")
    }

    /// Where stream `a`'s lane is, as the database has it.
    static func lanePosition(_ postgres: TestPostgres) async throws -> String {
        try await postgres.psql("SELECT position FROM relay_log_cursors WHERE stream = 'a' AND consumer = 'lane'")
    }

    @Test(
        "two relays each hold their own stream's lease; a stopped relay's stream is adopted, its cursor writes refused, and handed back when it is alive again"
    )
    func adoptionAndHandBack() async throws {
        try await Fixture.withCluster { postgres in
            let location = try Fixture.location(postgres)
            // A long lease, so that a busy machine (a CI run beside a CPU burner) never lets one run
            // out between a round and the step after it; a stops by its lease being made to run
            // out, in the database's clock and in its own, rather than by waiting it out.
            let leasesA = StreamLeases(location: location, stream: "a", lease: .seconds(60), durability: LogDurability(.files), logger: quietLogger)
            let leasesB = StreamLeases(location: location, stream: "b", lease: .seconds(60), durability: LogDurability(.files), logger: quietLogger)
            let calls = NIOLockedValueBox<[String]>([])
            await leasesB.setAdoption(
                StreamLeases.Adoption(
                    adopt: { stream in
                        calls.withLockedValue { $0.append("adopt \(stream)") }
                        return true
                    },
                    handBack: { stream in calls.withLockedValue { $0.append("handBack \(stream)") } }))
            // The tables and each relay's stream, as each relay's log makes them at start; a's lane
            // moves under a's lease.
            let logA = try await Fixture.open(postgres, stream: "a", consumers: [.cursorFile("lane")], fenced: ["lane"], fence: leasesA.fence)
            let logB = try await Fixture.open(postgres, stream: "b", consumers: [.cursorFile("lane")], fenced: ["lane"], fence: leasesB.fence)
            #expect(try await logA.append(Fixture.events(1...20)) == 1..<21)
            // Each stream was opened once as its writer (generation 1): each relay marks its own
            // stream alive and takes its lease only as that writer.
            await leasesA.setWriter(1)
            await leasesB.setWriter(1)

            for _ in 0..<3 {
                await leasesA.round()
                await leasesB.round()
                #expect(leasesA.fence.holds("a"))
                #expect(!leasesA.fence.holds("b"))
                #expect(leasesB.fence.holds("b"))
                #expect(!leasesB.fence.holds("a"))
            }
            #expect(try await Self.lease("a", postgres) == "\(leasesA.holder) 1")
            #expect(try await Self.lease("b", postgres) == "\(leasesB.holder) 1")
            #expect(calls.withLockedValue { $0 }.isEmpty)
            // No synchronous standby: an acknowledgement is on one machine.
            #expect(
                leasesA.durability.current
                    == LogDurability.Reading(
                        store: "postgresql", copies: 1, synchronousCommit: "on", synchronousStandbyNames: "", synchronousStandbys: []))
            // A round just before each write under a lease, as a relay renews it every lease/3: on a
            // machine loaded enough (a CI run's thorough tier beside a burner, load 17), the steps
            // since the last round once took longer than the lease itself.
            await leasesA.round()
            try await logA.commitCursor("lane", to: 5)
            #expect(try await Self.lanePosition(postgres) == "5")

            // a stops renewing: its heartbeat and its lease run out in the database's clock, and
            // in its own (the renewal it last sent is a lease old); b's next round adopts its stream.
            _ = try await postgres.psql(
                "UPDATE relay_log_streams SET alive_until = now() - interval '1 second' WHERE stream = 'a'; UPDATE relay_log_leases SET expires_at = now() - interval '1 second' WHERE stream = 'a'"
            )
            leasesA.fence.granted("a", holder: leasesA.holder, token: 1, sentAt: .now - .seconds(61), lease: .seconds(60))
            #expect(
                try await postgres.psql(
                    "SELECT (s.alive_until < now() AND l.expires_at < now())::text FROM relay_log_streams s JOIN relay_log_leases l USING (stream) WHERE stream = 'a'"
                ) == "true")
            await leasesB.round()
            #expect(calls.withLockedValue { $0 } == ["adopt a"])
            #expect(leasesB.fence.holds("a"))
            #expect(leasesB.fence.holds("b"))
            #expect(!leasesA.fence.holds("a"))
            #expect(try await Self.lease("a", postgres) == "\(leasesB.holder) 2")

            // a's process moves its lane no more: its lease ran out here...
            let expired = try await Self.refusedCursor(logA, to: 10)
            #expect(expired == "cursor lane of stream a not moved: this relay does not hold the stream's lease now")
            // ...and, were its clock to say otherwise, the database refuses the token it was given.
            leasesA.fence.granted("a", holder: leasesA.holder, token: 1, sentAt: .now, lease: .seconds(60))
            let stale = try await Self.refusedCursor(logA, to: 10)
            #expect(stale == "cursor lane of stream a not moved: this relay does not hold the stream's lease now")
            #expect(try await Self.lanePosition(postgres) == "5")
            // The adopter, reading a's stream under its own lease, moves it.
            let adopted = try await Fixture.open(
                postgres, stream: "a", consumers: [.cursorFile("lane")], fenced: ["lane"], fence: leasesB.fence, readOnly: true)
            #expect(await adopted.cursorPosition("lane") == 5)
            await leasesB.round()
            #expect(leasesB.fence.holds("a"), "b still forwards a's stream: a is not alive")
            try await adopted.commitCursor("lane", to: 10)
            #expect(try await Self.lanePosition(postgres) == "10")

            // a is back: b hands its stream back (stopping its lanes first), and a takes its lease
            // again at a later round, under a new token.
            try await Fixture.waitFor("b to hand a's stream back") {
                await leasesA.round()
                await leasesB.round()
                // The handback runs in a task of its own while b's rounds go on: its lanes stop
                // (the hook), then b lets the lease go.
                return calls.withLockedValue { $0 } == ["adopt a", "handBack a"] && !leasesB.fence.holds("a")
            }
            try await Fixture.waitFor("a to hold its own lease again") {
                await leasesA.round()
                return leasesA.fence.holds("a")
            }
            #expect(try await Self.lease("a", postgres) == "\(leasesA.holder) 3")
            await leasesB.round()
            #expect(leasesB.fence.holds("b"))
            #expect(!leasesB.fence.holds("a"))
            #expect(calls.withLockedValue { $0 } == ["adopt a", "handBack a"])
            await leasesA.round()
            try await logA.commitCursor("lane", to: 15)
            #expect(try await Self.lanePosition(postgres) == "15")
            // The same holder under the token of its first lease (a write sent before it lost the
            // stream): the database refuses it, as the token changed twice since.
            leasesA.fence.granted("a", holder: leasesA.holder, token: 1, sentAt: .now, lease: .seconds(60))
            let earlierToken = try await Self.refusedCursor(logA, to: 18)
            #expect(earlierToken == "cursor lane of stream a not moved: this relay does not hold the stream's lease now")
            #expect(try await Self.lanePosition(postgres) == "15")
            await leasesA.round()
            try await logA.commitCursor("lane", to: 18)
            #expect(try await Self.lanePosition(postgres) == "18")
            await adopted.close()
            await logA.close()
            await logB.close()
        }
    }

    /// The text of the refusal of moving `log`'s lane to `position`; fails if it moved.
    static func refusedCursor(_ log: WriteAheadLog, to position: UInt64) async throws -> String {
        do throws(LogError) {
            try await log.commitCursor("lane", to: position)
        } catch {
            guard case .storeUnavailable(let text) = error else { throw Fixture.Failure(description: "refused otherwise: \(error)") }
            return text
        }
        throw Fixture.Failure(description: "the lane's cursor moved to \(position) without the lease")
    }
}

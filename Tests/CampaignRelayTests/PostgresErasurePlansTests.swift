import RelayCore
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog
@testable import RelayPostgres

/// The plans of a stream's unfinished erasures, kept beside the stream (`relay_erasure_plans`):
/// whoever opens the stream (its relay again, or an adopter, read only) hands their registrations
/// out as erased entries from the first read; a plan is stored only under the stream's lease.
@Suite("Unfinished erasures kept beside the stream in PostgreSQL", .timeLimit(.minutes(5)), .tier(.fast))
struct PostgresErasurePlansTests {
    typealias Fixture = PostgresLogFixture

    static func plan(_ sequences: [UInt64]) -> ErasurePlan {
        ErasurePlan(
            id: ErasurePlan.newID(), requestedAt: EventTime.now().rfc3339, selectorKind: "user-key", selectorHash: "hash:0123456789ab",
            integrationKey: nil, boundary: 11,
            targets: sequences.map {
                ErasurePlan.Target(
                    sequence: $0, tenant: "", integrationKey: "app", platform: "android", tokenDigest: String(repeating: "0", count: 64),
                    timeNanoseconds: 0, originRelayId: nil, viaRelayId: nil, forwarded: false, handedOn: false)
            }, archiveDirectories: [])
    }

    /// Runs a blocking call of the plan store on the fixture's thread for blocking calls.
    static func blocking<Value: Sendable>(_ body: @escaping @Sendable () throws(LogError) -> Value) async throws -> Value {
        try await Fixture.readers.run { () throws(LogError) -> Value in try body() }
    }

    /// The sequences `log` hands out as erased entries, reading everything below its durable end.
    static func erasedSequences(_ log: WriteAheadLog) async throws -> [UInt64] {
        let read = try await Fixture.read(log, below: await log.durableSequence)
        return read.events.compactMap { if case .erased = $0.event { $0.sequence } else { nil } }
    }

    @Test(
        "a plan stored beside the stream masks its sequences in a reader opened afterwards, adopter or owner; a fence without the lease stores none")
    func plansMaskTheStream() async throws {
        try await Fixture.withCluster { postgres in
            let location = try Fixture.location(postgres)
            let owner = try await Fixture.open(postgres, stream: "edge-p")
            _ = try await owner.append(Fixture.events(1...10))
            await owner.close()

            // A relay that holds no lease of the stream stores no plan, and says why.
            let unfenced = PostgresErasurePlans(location: location, stream: "edge-p", fence: StreamLeaseFence())
            let refused = Self.plan([3])
            await #expect {
                try await Self.blocking { () throws(LogError) in try unfenced.store(refused) }
            } throws: { error in
                "\(error)".contains("does not hold its lease")
            }

            let plans = PostgresErasurePlans(location: location, stream: "edge-p", fence: nil)
            let stored = Self.plan([3, 7])
            try await Self.blocking { () throws(LogError) in try plans.store(stored) }
            #expect(try await Self.blocking { () throws(LogError) in try plans.pending(skippingUnreadable: false) } == [stored])

            // An adopter opens the stream read only; the owner opens it again.
            let adopter = try await Fixture.open(postgres, stream: "edge-p", readOnly: true)
            #expect(try await Self.erasedSequences(adopter) == [3, 7])
            await adopter.close()
            let reopened = try await Fixture.open(postgres, stream: "edge-p")
            #expect(try await Self.erasedSequences(reopened) == [3, 7])
            await reopened.close()

            // Once the plan is removed (the erasure finished), nothing is masked at the next open.
            try await Self.blocking { () throws(LogError) in try plans.remove(stored) }
            let after = try await Fixture.open(postgres, stream: "edge-p", readOnly: true)
            #expect(try await Self.erasedSequences(after).isEmpty)
            await after.close()
        }
    }
}

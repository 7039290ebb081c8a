import Foundation
import RelayCore
import RelayForwarding
import RelayLog
import RelayPostgres
import RelayPrivacy
import RelayProcessTestSupport
import RelayServer
import RelayTestSupport
import TestTiers
import Testing

/// What `docs/privacy.md` promises when an erasure fails: an audit log that cannot be written
/// leaves the plan (the log already rewritten) for the next run to finish; a plan that does not
/// decode stops every erasure before anything changes while `serve` serves on; a PostgreSQL that
/// does not answer fails the erasure after its plan, the registrations masked, and the next run
/// with PostgreSQL finishes it. In this process, on real files.
@Suite("Erasing a person: failures", .tier(.fast))
struct ErasureFailureTests {
    static let selector = ErasureSelector(.userKey("pdcanaryadauser"))

    /// A bench holding two of Ada's registrations (one a dead letter) and one of Bob's; their
    /// sequence numbers.
    static func prepared(_ label: String) async throws -> (ErasureBench, ada: [UInt64], bob: UInt64) {
        let bench = try await ErasureBench.open(label)
        let adas = [try ErasureBench.ada("pdtok1"), try ErasureBench.ada("pdtok2", tenant: "brand-a", platform: .ios)]
        let sequences = try await bench.append(adas + [try ErasureBench.registration("pdtok3", user: "pdcanarybobuser")])
        try await bench.store.deadLetter(
            sequence: sequences[1], event: .registration(adas[1]), url: "https://campaign.example/brand-a", status: 400, body: "refused",
            reason: "Campaign refused it")
        return (bench, Array(sequences[0..<2]), sequences[2])
    }

    @Test(
        "an audit log that cannot be written: the erasure fails with the plan kept and the log rewritten; the next run records it once and removes the plan"
    )
    func auditLogNotWritable() async throws {
        let (bench, adas, bob) = try await Self.prepared("erasure-audit")
        defer { Task { await bench.close() } }
        // A directory where the file should be: root ignores permissions, not file types.
        let audit = ErasureAuditLog.path(dataDirectory: bench.directory)
        try FileManager.default.createDirectory(atPath: audit, withIntermediateDirectories: false)

        do {
            _ = try await bench.erasure().erase(Self.selector, dryRun: false)
            Issue.record("the erasure succeeded without its audit record")
        } catch {
            guard case .audit = error else { throw error }
        }
        let plans = try bench.plans()
        #expect(plans.count == 1 && plans.first?.targets.map(\.sequence) == adas, "the plan stays")
        let stored = try bench.stored()
        #expect(adas.allSatisfy { PersonalDataErasureTests.isErased(stored[$0]) }, "the segments were rewritten before the record")
        #expect(!PersonalDataErasureTests.isErased(stored[bob]))
        #expect(try bench.segments().values.allSatisfy { !$0.contains(utf8: "pdcanaryada") })
        #expect(try await bench.store.deadLetters(includeRequeued: true).isEmpty)

        try FileManager.default.removeItem(atPath: audit)
        let finished = try await bench.erasure().finishPending()
        #expect(finished.map(\.id) == plans.map(\.id))
        let records = try ErasureAuditLog.records(dataDirectory: bench.directory)
        #expect(records.map(\.id) == plans.map(\.id) && records.first?.registrations == 2, "one record: \(records)")
        #expect(try bench.plans().isEmpty, "the plan is removed once recorded")
    }

    @Test("a plan that does not decode: erase stops naming it and changes nothing; serve serves on, and answers erasures 503")
    func unreadablePlan() async throws {
        let (bench, _, _) = try await Self.prepared("erasure-bad-plan")
        let directory = bench.directory
        defer { removeTree(directory) }
        let planPath = bench.walDirectory + "/erasure-ebad.plan"
        let planBytes = Data(#"{"id":"x"}"#.utf8)
        #expect(FileManager.default.createFile(atPath: planPath, contents: planBytes))
        let storedBefore = try bench.stored()
        let segmentsBefore = try bench.segments()

        do {
            _ = try await bench.erasure().erase(Self.selector, dryRun: false)
            Issue.record("the erasure went on past a plan it cannot read")
        } catch {
            let text = "\(error)"
            #expect(text.contains("erasure-ebad.plan") && text.contains("cannot be read") && text.contains("nothing was changed"), "\(text)")
        }
        #expect(try bench.stored() == storedBefore && bench.segments() == segmentsBefore, "the log is as it was")
        #expect(try await bench.store.deadLetters(includeRequeued: true).count == 1, "the dead letter stays")
        #expect(FileManager.default.contents(atPath: planPath) == planBytes, "the plan stays as it was")
        #expect(!FileManager.default.fileExists(atPath: ErasureAuditLog.path(dataDirectory: directory)))
        await bench.log.close()

        let server = try await RunningServer.start { $0.dataDirectory = directory }
        let http = TestHTTPClient()
        let hit = #"[{"kind":"track","action":"open","messageId":"77001","deliveryId":"d1"}]"#
        let stored = try await http.post(server.url + "/v1/events", hit, headers: [("Content-Type", "application/json")])
        #expect(stored.status == 200, "serve serves on: \(stored.body)")
        let erasure = try await http.post(server.url + "/v1/privacy/erasures", #"{"userKey":"pdcanaryadauser"}"#)
        #expect(erasure.status == 503 && erasure.body.contains("cannot be read"), "\(erasure.status) \(erasure.body)")
        await http.shutdown()
        await server.stop()
        #expect(FileManager.default.contents(atPath: planPath) == planBytes)
    }

    @Test("PostgreSQL down: the erasure fails after its plan, her registrations masked and nothing else changed; finished once PostgreSQL answers")
    func fleetDown() async throws {
        let (bench, adas, bob) = try await Self.prepared("erasure-fleet-down")
        defer { Task { await bench.close() } }
        let storedBefore = try bench.stored()
        let segmentsBefore = try bench.segments()

        do {
            _ = try await bench.erasure(fleet: { _ in throw FleetDown() }).erase(Self.selector, dryRun: false)
            Issue.record("the erasure succeeded without the fleet's PostgreSQL")
        } catch {
            guard case .fleet(let message) = error else { throw error }
            #expect(message.contains("connection refused"), "\(message)")
        }
        let plans = try bench.plans()
        #expect(plans.count == 1 && plans.first?.countsIntoFleet == true && plans.first?.targets.map(\.sequence) == adas)
        #expect(adas.allSatisfy(bench.log.erasureMask.contains) && !bench.log.erasureMask.contains(bob), "her registrations are masked")
        #expect(try bench.stored() == storedBefore && bench.segments() == segmentsBefore, "no segment rewritten yet")
        #expect(try await bench.store.deadLetters(includeRequeued: true).count == 1, "the dead letter stays until the step after the counts")

        // Finishing it needs the fleet: without one, it is refused.
        do {
            _ = try await bench.erasure().finishPending()
            Issue.record("an erasure begun with a fleet finished without it")
        } catch {
            guard case .fleet(let message) = error else { throw error }
            #expect(message.contains("postgres-url"), "\(message)")
        }
        #expect(try bench.plans().count == 1)

        let changed = {
            var result = FleetErasure.Result()
            result.registrationsUncounted = 2
            result.tokensForgotten = 2
            return result
        }()
        let fleetSaw = SequencesSeen()
        let finished = try await bench.erasure(fleet: { targets in
            await fleetSaw.record(targets.map(\.sequence))
            return changed
        }).finishPending()
        #expect(await fleetSaw.sequences == adas)
        #expect(finished.count == 1 && finished.first?.fleet == changed, "\(finished)")
        #expect(try ErasureAuditLog.records(dataDirectory: bench.directory).first?.fleet == changed)
        #expect(try bench.plans().isEmpty)
        let stored = try bench.stored()
        #expect(adas.allSatisfy { PersonalDataErasureTests.isErased(stored[$0]) } && stored[bob] == storedBefore[bob])
        #expect(try await bench.store.deadLetters(includeRequeued: true).isEmpty)
    }
}

/// The targets a test's fleet step was given.
actor SequencesSeen {
    var sequences: [UInt64] = []

    func record(_ sequences: [UInt64]) { self.sequences = sequences }
}

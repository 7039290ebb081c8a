import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// Forwarding that protects Campaign: a backlog drained by a real `campaign-relay upload` into an
/// emulator with a real capacity (a queue of a few places, 503 when it is full).
@Suite("Draining into a host of limited capacity", .serialized, .timeLimit(.minutes(15)), .tier(.thorough))
struct CapacityDrainTests {
    static let hits = 50_000
    static let capacity = 2_000.0
    /// Fewer places than the default --concurrency (8).
    static let queuePlaces = 4

    /// A data directory holding `hits` tracking hits (distinct ids), for the uploader to drain.
    static func backlog(_ binary: String, _ label: String) async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path
        let lines = (1...hits).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"d1"}"# }.joined(separator: "\n") + "\n"
        let run = try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", directory, "--json"], input: Data(lines.utf8))
        try #require(run.status == 0, "\(run.stderr)")
        return directory
    }

    /// What one drain did, as the host saw it.
    struct Drain: CustomStringConvertible {
        var seconds: Double
        var requests: Int
        var overloaded: Int
        var accepted: Int
        var distinct: Int

        var description: String {
            let ideal = Double(CapacityDrainTests.hits) / CapacityDrainTests.capacity
            return String(
                format:
                    "%.1f s for %d hits (%.2f× the %.0f s the capacity allows), %d of %d requests answered 503 (%.2f %%), %d accepted, %d distinct",
                seconds, CapacityDrainTests.hits, seconds / ideal, ideal, overloaded, requests, 100 * Double(overloaded) / Double(max(1, requests)),
                accepted, distinct)
        }
    }

    /// Drains a fresh backlog with `options` into a fresh emulator of the capacity.
    static func drain(_ binary: String, _ label: String, _ options: [String]) async throws -> Drain {
        let directory = try await backlog(binary, label)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var faults = EmulatorFaults()
        faults.capacity = capacity
        faults.queuePlaces = queuePlaces
        let campaign = try await RunningEmulator.start(faults: faults)
        let started = ContinuousClock.now
        let upload = try await RelayBinary.run(
            binary, ["upload", "--until-drained", "--tracking-host", campaign.url, "--data-dir", directory, "--json"] + options, seconds: 600)
        let elapsed = (ContinuousClock.now - started).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        #expect(upload.status == 0, "\(upload.stderr.suffix(3000))")
        let recorder = campaign.emulator.recorder
        let drain = Drain(
            seconds: seconds, requests: await recorder.receivedRequests, overloaded: await recorder.overloadedRequests,
            accepted: await recorder.acceptedHits, distinct: await recorder.distinctHits)
        await campaign.stop()
        return drain
    }

    @Test(
        "50,000 hits into a host of 2,000 hits/s and 4 places: with adaptive concurrency every hit once and at most 1 % of requests answered 503; with it off and 64 in flight, many 503s; both drains' times printed beside the capacity's"
    )
    func adaptiveConcurrencyProtectsTheHost() async throws {
        let binary = try RelayBinary.path()
        let adaptive = try await Self.drain(binary, "drain-adaptive", [])
        print("adaptive concurrency (ceiling 8): \(adaptive)")
        let fixed = try await Self.drain(binary, "drain-fixed", ["--no-adaptive-concurrency", "--concurrency", "64", "--backoff-cap", "1"])
        print("fixed concurrency 64: \(fixed)")

        #expect(adaptive.accepted == Self.hits && adaptive.distinct == Self.hits, "every hit once: \(adaptive)")
        #expect(adaptive.overloaded * 100 <= adaptive.requests, "at most 1 % answered 503: \(adaptive)")
        // The drain's time against the capacity's (the issue's 1.25×) is printed above and measured
        // by Benchmarks/drain.sh: a test asserts no rate, and this tier runs beside a CPU burner
        // and its own parallel suites (load 15-17 on 2 cores), where any client falls behind.
        #expect(fixed.distinct == Self.hits, "\(fixed)")
        #expect(fixed.overloaded * 100 > fixed.requests, "64 in flight into 4 places: many 503s: \(fixed)")
    }
}

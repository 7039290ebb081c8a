import CampaignProtocol
import Foundation
import RelayCore
import RelayForwarding
import RelayLog
import RelayProcessTestSupport
import RelayServer
import RelayTestSupport
import TestTiers
import Testing

/// The relay's `max-wal-bytes` above the tenants' shares (`max-wal-bytes` of `[tenant.NAME]`):
/// each share limits what its tenant's hosts may owe, and the relay's limit is still the limit of
/// the disk for all of them together (README, "Tenants"; docs/configuration.md).
@Suite("Tenants: the relay's log limit above their shares", .serialized, .timeLimit(.minutes(5)), .tier(.fast))
struct TenantLogLimitTests {
    /// The relay's limit, and each tenant's share: each below it, both together above it.
    static let logLimit = 24_000
    static let share = 15_000

    /// A POST /v1/events body of 5 tracking events, ids from `first`.
    static func batch(_ first: Int) -> String {
        (first..<first + 5).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"share"}"# }.joined(separator: "\n")
    }

    /// Posts batches to `path` until one is refused; the refusal and the batches taken before it.
    static func fill(_ http: TestHTTPClient, _ url: String, _ first: inout Int) async throws -> (refusal: TestHTTPClient.Answer, taken: Int) {
        var taken = 0
        // A bound, never reached: 2,000 batches of 5 events are some 400 KB, far past every limit here.
        for _ in 0..<2_000 {
            let answer = try await http.post(url, batch(first))
            first += 5
            guard answer.status == 200 else { return (answer, taken) }
            taken += 1
        }
        Issue.record("\(url) took 2,000 batches and was never refused")
        throw Unrefused()
    }

    struct Unrefused: Error {}

    /// The value of the sample `series` (name and labels) in a Prometheus text.
    static func sample(_ series: String, in metrics: String) -> Double? {
        metrics.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.dropFirst(series.count + 1)) }
    }

    @Test(
        "brand-a filled to its share gets 503 naming its share; then the log is full: brand-b, owing less than its share, and the default tenant get 503 naming the log's limit"
    )
    func relayLimitAboveTheShares() async throws {
        // Hosts nothing answers: nothing is forwarded, so every event stays owed.
        let unreachable = try CampaignHost(parsing: "http://127.0.0.1:1", role: "test")
        let server = try await RunningServer.start { configuration in
            // Uncompressed frames in small segments, not preallocated: the log's bytes follow the
            // events' encoded bytes closely, and the segment files are exactly the log's bytes.
            configuration.log = .init(
                segmentBytes: 4096, maximumLogBytes: Int64(Self.logLimit), compressionLevel: 0, preallocateSegments: false)
            configuration.aggregates = false
            configuration.trackingHost = unreachable
            configuration.tenants = ["brand-a", "brand-b"].compactMap { name in
                (try? TenantName(validating: name)).map { tenant in
                    TenantConfiguration(
                        destinations: TenantDestinations(tenant: tenant, trackingHost: unreachable, marketingHost: nil),
                        logShareBytes: Int64(Self.share))
                }
            }
        }
        let http = TestHTTPClient()
        var next = 1

        // brand-a fills its share, well before the log's limit.
        let (refusedA, takenA) = try await Self.fill(http, server.url + "/brand-a/v1/events", &next)
        #expect(refusedA.status == 503 && refusedA.headers.first(name: "Retry-After") == "30", "\(refusedA.status) \(refusedA.headers)")
        #expect(
            refusedA.body.contains("tenant brand-a's share of the log is full") && refusedA.body.contains("limit \(Self.share) bytes"),
            "\(refusedA.body)")
        #expect(takenA > 10, "brand-a's share held \(takenA) batches")

        // brand-b owes nothing yet: what is left of the log fills with its events, and the log's
        // limit refuses it before its own share.
        let (refusedB, takenB) = try await Self.fill(http, server.url + "/brand-b/v1/events", &next)
        #expect(refusedB.status == 503 && refusedB.headers.first(name: "Retry-After") == "30", "\(refusedB.status) \(refusedB.headers)")
        #expect(refusedB.body.contains("log full") && refusedB.body.contains("limit \(Self.logLimit) bytes"), "\(refusedB.body)")
        #expect(!refusedB.body.contains("share"), "brand-b was refused for the log's limit, not its share: \(refusedB.body)")
        #expect(takenB > 0, "brand-b was taken until the log was full")
        // And the default tenant, which has no share at all.
        let refusedDefault = try await http.post(server.url + "/v1/events", Self.batch(next))
        #expect(refusedDefault.status == 503 && refusedDefault.body.contains("log full"), "\(refusedDefault.status) \(refusedDefault.body)")

        // brand-b owes less than its share (the gauge is sampled once a second: its first sample
        // with brand-b's events in it, and nothing of brand-b's was taken after the refusal); the
        // segment files hold no more than the log's limit.
        var owedB = 0.0
        let deadline = ContinuousClock.now + .seconds(60)
        while owedB == 0, ContinuousClock.now < deadline {
            let metrics = try await http.get(server.url + "/metrics").body
            owedB = Self.sample(#"relay_tenant_log_owed_bytes{tenant="brand-b"}"#, in: metrics) ?? 0
            if owedB == 0 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(owedB > 0 && owedB < Double(Self.share), "brand-b owes \(owedB) bytes")
        let walDirectory = "\(server.dataDirectory)/wal"
        let segmentBytes = try FileManager.default.contentsOfDirectory(atPath: walDirectory).filter { $0.hasSuffix(".wal") }.reduce(0) {
            $0 + ((try FileManager.default.attributesOfItem(atPath: "\(walDirectory)/\($1)")[.size] as? Int) ?? 0)
        }
        #expect(segmentBytes <= Self.logLimit && segmentBytes > Self.share, "the segments take \(segmentBytes) bytes")
        await http.shutdown()
        await server.stop()
        removeTree(server.dataDirectory)
    }
}

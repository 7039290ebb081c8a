import Foundation
import RelayProcessTestSupport
import RelayServer
import TestTiers
import Testing

/// The rules every ingest route shares (IngestAnswerMiddleware, BodyLimitMiddleware): applied
/// the same way on the SDK endpoints, `/v1/events` and relay batches, not by each handler.
@Suite("Ingest route rules", .timeLimit(.minutes(10)), .tier(.fast))
struct IngestRouteRulesTests {
    @Test(
        "every refusal as invalid counts once in relay_requests_rejected_total whatever the route (415, 413, 400, 422); a 200 does not; 413 answers in the route's own form"
    )
    func rejectionsCountOnceOnEveryRoute() async throws {
        let server = try await RunningServer.start { configuration in
            configuration.maximumBatchBytes = 1000
            configuration.maximumFormBytes = 500
            configuration.aggregates = false
        }
        let http = TestHTTPClient()
        let batch = #"[{"kind":"track","action":"open","messageId":"1","deliveryId":"rules"}]"#
        let events = server.url + "/v1/events"
        let register = server.url + "/nms/mobile/1/registerAndroid.jssp"

        #expect(try await http.post(events, batch, headers: [("Content-Type", "text/plain")]).status == 415)
        let tooLargeBatch = try await http.post(events, String(repeating: " ", count: 1001) + batch)
        #expect(tooLargeBatch.status == 413 && tooLargeBatch.body == #"{"error":"request body larger than 1000 bytes"}"#, "\(tooLargeBatch)")
        #expect(try await http.post(events, "[{").status == 400)
        #expect(try await http.post(register, "registrationToken=t&mobileAppUuid=k", headers: [("Content-Type", "application/json")]).status == 415)
        let tooLargeForm = try await http.post(register, "registrationToken=" + String(repeating: "t", count: 500), headers: formHeaders)
        #expect(tooLargeForm.status == 413 && tooLargeForm.body == "request body larger than 500 bytes\n", "\(tooLargeForm)")
        #expect(try await http.get(server.url + "/r/?id=bad").status == 400)
        #expect(try await http.post(events, batch, headers: [("Idempotency-Key", "rules-1")]).status == 200)
        let reused = try await http.post(events, batch.replacing(#""1""#, with: #""2""#), headers: [("Idempotency-Key", "rules-1")])
        #expect(reused.status == 422, "\(reused)")
        #expect(try await http.post(register, "registrationToken=t&mobileAppUuid=k", headers: formHeaders).status == 200)

        let metrics = try await http.get(server.url + "/metrics").body
        #expect(metrics.contains("\nrelay_requests_rejected_total 7\n"), "\(metrics)")
        #expect(metrics.contains("\nrelay_requests_acknowledged_total 2\n"), "\(metrics)")
        #expect(metrics.contains("\nrelay_requests_unavailable_total 0\n"), "\(metrics)")
        await http.shutdown()
        await server.stop()
    }
}

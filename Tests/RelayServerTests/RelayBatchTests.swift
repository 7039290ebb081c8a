import Foundation
import RelayChain
import RelayCore
import RelayLog
import RelayProcessTestSupport
import RelayServer
import TestTiers
import Testing

/// The central side of a relay chain over real HTTP: `POST /v1/relay/batches`.
@Suite("Relay batches, the central side", .serialized, .tier(.fast))
struct RelayBatchTests {
    static let token = "relay-token-0123456789"
    static let edge = "598ef5b4-921c-4ba5-b8e1-ef71a5e2a510"

    static func hits(_ sequences: ClosedRange<UInt64>) -> [SequencedEvent] {
        sequences.map { sequence in
            SequencedEvent(
                sequence: sequence,
                event: .tracking(
                    TrackingEvent(
                        action: .open, messageId: MessageID(decimal: Int64(sequence)), deliveryId: "edge",
                        time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000))))
        }
    }

    /// Posts `events` as the batch `epoch`, `sequences` of the edge relay.
    static func post(
        _ http: TestHTTPClient, _ server: RunningServer, _ events: [SequencedEvent], epoch: UInt32 = 1, sequences: Range<UInt64>,
        token: String? = token, body: [UInt8]? = nil
    ) async throws -> TestHTTPClient.Answer {
        var headers = [
            ("Relay-Id", edge), ("Relay-Epoch", String(epoch)), ("Relay-Sequences", "\(sequences.lowerBound)-\(sequences.upperBound)"),
            ("Content-Type", "application/x-campaign-relay-batch"),
        ]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return try await http.send(
            .POST, server.url + "/v1/relay/batches", body: body ?? RelayBatchBody.encode(events, first: sequences.lowerBound), headers: headers)
    }

    @Test("batches are appended once with their origin: already stored, overlap, gap, stale epoch, wrong token; the ledger survives a restart")
    func deduplication() async throws {
        let server = try await RunningServer.start { $0.relayToken = Self.token }
        let http = TestHTTPClient()
        let wrong = try await Self.post(http, server, Self.hits(1...3), sequences: 1..<4, token: "not-the-token-at-all")
        #expect(wrong.status == 401)
        // The words are read on the edge, whose option differs from the central's: both are named.
        #expect(
            wrong.body
                == #"{"error":"relay batches need Authorization: Bearer <this relay's --relay-token>: on the edge relay, set --upstream-token (env CAMPAIGN_RELAY_UPSTREAM_TOKEN) to the same value as --relay-token (env CAMPAIGN_RELAY_RELAY_TOKEN) here, on the central relay"}"#,
            "\(wrong.body)")
        #expect(wrong.headers.first(name: "WWW-Authenticate") == "Bearer")
        #expect(try await Self.post(http, server, Self.hits(1...3), sequences: 1..<4, token: nil).status == 401)

        let first = try await Self.post(http, server, Self.hits(1...3), sequences: 1..<4)
        #expect(first.status == 200)
        #expect(first.body == #"{"alreadyStored":false,"appended":3,"next":4}"#)
        let again = try await Self.post(http, server, Self.hits(1...3), sequences: 1..<4)
        #expect(again.body == #"{"alreadyStored":true,"appended":0,"next":4}"#, "a lost answer: the batch again")
        let overlap = try await Self.post(http, server, Self.hits(2...5), sequences: 2..<6)
        #expect(overlap.body == #"{"alreadyStored":false,"appended":2,"next":6}"#)
        let gap = try await Self.post(http, server, Self.hits(8...9), sequences: 8..<10)
        #expect(gap.status == 409)
        #expect(gap.body == #"{"error":"sequences 6 to 7 of relay \#(Self.edge) are missing: send from 6","expected":6}"#)
        // A copy of the edge's directory started epoch 2 at sequence 6.
        let copy = try await Self.post(http, server, Self.hits(6...7), epoch: 2, sequences: 6..<8)
        #expect(copy.body == #"{"alreadyStored":false,"appended":2,"next":8}"#)
        let stale = try await Self.post(http, server, Self.hits(8...8), epoch: 1, sequences: 8..<9)
        #expect(stale.status == 403)
        #expect(stale.body.contains(#""currentEpoch":2"#), "\(stale.body)")
        let garbage = try await Self.post(http, server, [], sequences: 8..<9, body: Array("not a batch".utf8))
        #expect(garbage.status == 400)
        #expect(garbage.body == #"{"error":"the batch body is malformed: the body does not start with CRWB"}"#)
        // Per sending relay, in the metrics: every answer counted, and the events appended.
        let metrics = try await http.get(server.url + "/metrics").body.split(separator: "\n").filter { $0.hasPrefix("relay_received_") }.sorted()
        #expect(
            metrics == [
                #"relay_received_batches_total{relay="\#(Self.edge)",answer="already_stored"} 1"#,
                #"relay_received_batches_total{relay="\#(Self.edge)",answer="appended"} 3"#,
                #"relay_received_batches_total{relay="\#(Self.edge)",answer="gap"} 1"#,
                #"relay_received_batches_total{relay="\#(Self.edge)",answer="stale_epoch"} 1"#,
                #"relay_received_events_total{relay="\#(Self.edge)"} 7"#,
            ], "\(metrics)")
        await server.stop()

        // After a restart the ledger comes back from the log: nothing is appended twice.
        let restarted = try await RunningServer.start {
            $0.relayToken = Self.token
            $0.dataDirectory = server.dataDirectory
        }
        let resent = try await Self.post(http, restarted, Self.hits(6...7), epoch: 2, sequences: 6..<8)
        #expect(resent.body == #"{"alreadyStored":true,"appended":0,"next":8}"#)
        let next = try await Self.post(http, restarted, Self.hits(8...9), epoch: 2, sequences: 8..<10)
        #expect(next.body == #"{"alreadyStored":false,"appended":2,"next":10}"#)
        await restarted.stop()
        await http.shutdown()

        // The central's log: each edge event once, in order, with its origin.
        var reader = LogReader(walDirectory: LogLayout(dataDirectory: server.dataDirectory).walDirectory, from: 1)
        let logged = try reader.read(maximumEvents: 100).events
        reader.close()
        #expect(logged.map { $0.event.chain?.first.sequence } == (1...9).map { Optional(UInt64($0)) })
        #expect(logged.map { $0.event.chain?.first.epoch } == [1, 1, 1, 1, 1, 2, 2, 2, 2])
        #expect(logged.allSatisfy { $0.event.chain?.first.relayID == Self.edge && $0.event.chain?.hop == nil })
    }

    @Test("without --relay-token the endpoint does not exist")
    func absentWithoutToken() async throws {
        let server = try await RunningServer.start()
        let http = TestHTTPClient()
        #expect(try await Self.post(http, server, Self.hits(1...1), sequences: 1..<2).status == 404)
        await http.shutdown()
        await server.stop()
    }
}

import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import RelayProcessTestSupport
import RelayTestSupport
import Synchronization
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Three real processes, `serve --upstream-relay` (the edge), `serve --relay-token` (the central
/// relay, forwarding to Campaign) and `emulate` (Campaign), under load from 4 clients, with 10
/// SIGKILLs alternating between the edge and the central relay at moments chosen by progress, and
/// the central relay down for 5 s while the edge keeps taking events.
///
/// The re-send path runs in every run, not by luck: the edge's relay-lane cursor, as the first
/// edge kill left it, is put back at the long outage (the edge killed too while the central relay
/// is down: an eleventh SIGKILL), so the first batches the restarted central relay gets are ones its log holds
/// already, and its ledger, rebuilt from that log, must answer "already stored".
@Suite("kill -9 of a relay chain", .serialized, .timeLimit(.minutes(15)), .tier(.thorough), .seedInFailures)
struct RelayChainKillTests {
    static let token = "relay-token-0123456789"
    static let kills = 10
    /// The kill after which the central relay stays down for 5 s.
    static let longOutage = 5

    /// What the clients sent and what the edge acknowledged, by message id.
    final class Load: Sendable {
        struct State {
            var attempted = Set<Int>()
            var acknowledged: [Int: Event] = [:]
            var failures = 0
        }

        struct Event: Hashable {
            var deliveryId: String
            /// 1 impression, 2 open (the SDK tag Campaign receives).
            var tag: Int
        }

        let state = NIOLockedValueBox(State())
        let stopping = Atomic<Bool>(false)

        var acknowledgedCount: Int { state.withLockedValue { $0.acknowledged.count } }
    }

    final class Ports: Sendable {
        let edge = Atomic<Int>(0)
        let central = Atomic<Int>(0)
    }

    /// Message ids as numbers: `h` + hex (an SDK's wire form) or decimal (the JSON API).
    static func number(_ messageId: String) -> Int? {
        messageId.hasPrefix("h") ? Int(messageId.dropFirst(), radix: 16) : Int(messageId)
    }

    /// Client `client` until the load stops: clients 0 and 1 send SDK hits one by one (`GET /r/`),
    /// 2 and 3 batches of 25 events (`POST /v1/events`). An id is sent once: a request that fails
    /// (the edge was killed under it) is not retried, its events are only "attempted".
    static func client(_ client: Int, edge: @escaping @Sendable () -> String, load: Load, http: TestHTTPClient) async {
        var next = (client + 1) * 10_000_000
        let deliveryId = "d\(client)"
        while !load.stopping.load(ordering: .relaxed) {
            let ids: [Int]
            let answer: TestHTTPClient.Answer?
            let tag = client == 3 ? 1 : 2
            if client < 2 {
                ids = [next]
                load.state.withLockedValue { _ = $0.attempted.insert(next) }
                answer = try? await http.get(edge() + "/r/?id=h\(String(next, radix: 16)),\(deliveryId),2")
            } else {
                ids = Array(next..<next + 25)
                let action = tag == 1 ? "impression" : "open"
                let body = ids.map { #"{"kind":"track","action":"\#(action)","messageId":"\#($0)","deliveryId":"\#(deliveryId)"}"# }
                    .joined(separator: "\n")
                load.state.withLockedValue { $0.attempted.formUnion(ids) }
                answer = try? await http.post(edge() + "/v1/events", body, headers: [("Content-Type", "application/x-ndjson")])
            }
            next += ids.count
            if answer?.status == 200 {
                load.state.withLockedValue { state in
                    for id in ids { state.acknowledged[id] = Load.Event(deliveryId: deliveryId, tag: tag) }
                }
            } else {
                load.state.withLockedValue { $0.failures += 1 }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// The sum of a counter's samples in a Prometheus text.
    static func sum(_ family: String, in metrics: String) -> Int {
        metrics.split(separator: "\n").filter { $0.hasPrefix(family + "{") || $0.hasPrefix(family + " ") }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0) { $0 + Int($1) }
    }

    static func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
    }

    @Test(
        "edge → central under load, 10 kill -9 alternating, the central down 5 s and the edge put back behind it: batches answered already stored, each acknowledged event once at the central, its counts equal its log, Campaign got every hit, both logs clean"
    )
    func killCycles() async throws {
        let binary = try RelayBinary.path()
        let root = temporaryDirectory("chain-kill")
        defer { removeTree(root) }
        let (edgeDirectory, centralDirectory) = ("\(root)/edge", "\(root)/central")
        var generator = SeededGenerator(seed: TestSeed.make(for: "relay chain kill -9"))

        let emulator = try ChildProcess(binary, ["emulate", "--bind", "127.0.0.1:0", "--json"])
        defer { emulator.stopWithoutWaiting() }
        let campaign = try await emulator.await(#""url":"([^"]+)""#)

        // Restarts keep the ports the first starts got.
        let ports = Ports()
        func startCentral() async throws -> ChildProcess {
            let port = ports.central.load(ordering: .relaxed)
            let child = try ChildProcess(
                binary,
                [
                    "serve", "--bind", "127.0.0.1:\(port)", "--data-dir", centralDirectory, "--relay-token", Self.token, "--tracking-host", campaign,
                    "--marketing-host", campaign, "--backoff-cap", "1",
                ])
            let bound = try await child.await(#"address=127\.0\.0\.1:(\d+)"#)
            ports.central.store(Int(bound) ?? 0, ordering: .relaxed)
            return child
        }
        var centrals = [try await startCentral()]
        let central = { "http://127.0.0.1:\(ports.central.load(ordering: .relaxed))" }

        func startEdge() async throws -> ChildProcess {
            let child = try ChildProcess(
                binary,
                [
                    "serve", "--bind", "127.0.0.1:\(ports.edge.load(ordering: .relaxed))", "--data-dir", edgeDirectory, "--upstream-relay", central(),
                    "--upstream-token", Self.token, "--backoff-cap", "1",
                ])
            let bound = try await child.await(#"address=127\.0\.0\.1:(\d+)"#)
            ports.edge.store(Int(bound) ?? 0, ordering: .relaxed)
            return child
        }
        var edges = [try await startEdge()]
        let edge: @Sendable () -> String = { "http://127.0.0.1:\(ports.edge.load(ordering: .relaxed))" }

        let load = Load()
        let http = TestHTTPClient()
        let clients = Task {
            await withTaskGroup(of: Void.self) { group in
                for client in 0..<4 { group.addTask { await Self.client(client, edge: edge, load: load, http: http) } }
            }
        }

        // The edge's position in handing its log on (docs/wal-format.md, "Cursor file": the next
        // sequence at bytes 8..<16), as the first edge kill left it, put back at the long outage.
        let cursorPath = "\(edgeDirectory)/wal/cursors/upload-relay.cursor"
        func cursorPosition(_ bytes: Data) -> Int { bytes.count >= 16 ? (8..<16).reduce(0) { $0 | Int(bytes[$1]) << (8 * ($1 - 8)) } : 0 }
        var savedCursor: Data?
        var rewound: (from: Int, to: Int)?

        var outageChecked = false
        for kill in 0..<Self.kills {
            let killsEdge = kill % 2 == 0
            // The moment: the edge after it acknowledged a few thousand more events; the central
            // relay after it appended a few thousand more (its counter starts at 0 each start).
            let target = 300 + Int(generator.next() % 2700)
            let startAcknowledged = load.acknowledgedCount
            // A hang guard, not a pace: at the start of a full run beside a CPU burner, with every
            // suite starting at once, the clients had fewer than 3,000 events acknowledged in 60 s.
            let deadline = Date().addingTimeInterval(240)
            while Date() < deadline {
                if killsEdge {
                    if load.acknowledgedCount - startAcknowledged >= target { break }
                } else if let metrics = try? await http.get(central() + "/metrics").body,
                    Self.sum("relay_received_events_total", in: metrics) >= target
                {
                    break
                }
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(Date() < deadline, "kill \(kill): no progress to the kill moment in 240 s")
            try await Task.sleep(for: .microseconds(generator.next() % 3_000))
            let victim = killsEdge ? edges[edges.count - 1] : centrals[centrals.count - 1]
            #expect(victim.process.isRunning, "kill \(kill): the process died by itself: \(victim.text.suffix(2000))")
            Glibc.kill(victim.process.processIdentifier, SIGKILL)
            await victim.process.exited()

            if killsEdge {
                if savedCursor == nil { savedCursor = FileManager.default.contents(atPath: cursorPath) }
                edges.append(try await startEdge())
                continue
            }
            if kill == Self.longOutage {
                // The central relay stays down 5 s, and then until the clients have had 500 more
                // events acknowledged (on a loaded machine they may not run for most of 5 s): the
                // edge keeps acknowledging and says what waits.
                let before = load.acknowledgedCount
                try await Task.sleep(for: .seconds(5))
                try await waitUntil("500 events acknowledged by the edge while the central relay is down", seconds: 90) {
                    load.acknowledgedCount - before > 500
                }
                let readiness = try await http.get(edge() + "/readyz")
                let upstream = (try JSONSerialization.jsonObject(with: Data(readiness.body.utf8)) as? [String: Any])?["upstream"] as? [String: Any]
                #expect(upstream?["reachable"] as? Bool == false, "\(readiness.body)")
                #expect((upstream?["backlog"] as? Int ?? 0) > 0, "\(readiness.body)")
                #expect(try await http.get(edge() + "/healthz").status == 200)
                #expect(load.acknowledgedCount - before > 500, "the edge kept taking events while the central relay was down")
                outageChecked = true
                // The re-send path: the edge, killed too, restarts from the position the first
                // edge kill left, behind what the central relay has stored since. The first batches
                // the central relay gets after its restart are then ones its log holds already: a
                // ledger that did not account for the log would append them a second time.
                let saved = try #require(savedCursor, "the first edge kill left no relay-lane cursor to put back")
                let edgeVictim = edges[edges.count - 1]
                Glibc.kill(edgeVictim.process.processIdentifier, SIGKILL)
                await edgeVictim.process.exited()
                let current = cursorPosition(try Data(contentsOf: URL(fileURLWithPath: cursorPath)))
                rewound = (from: current, to: cursorPosition(saved))
                #expect(current > cursorPosition(saved), "the edge handed on nothing since the first edge kill: \(rewound.map { "\($0)" } ?? "")")
                try saved.write(to: URL(fileURLWithPath: cursorPath))
                edges.append(try await startEdge())
            }
            centrals.append(try await startCentral())
        }
        #expect(outageChecked)

        try await Task.sleep(for: .seconds(1))
        load.stopping.store(true, ordering: .relaxed)
        await clients.value
        // Everything goes on: the edge empties its backlog, the central relay forwards its log.
        _ = try await waitWhileProgressing("the edge to have handed everything on") {
            let body = try await http.get(edge() + "/readyz").body
            let upstream = (try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["upstream"] as? [String: Any]
            let backlog = upstream?["backlog"] as? Int ?? -1
            return (backlog == 0 && upstream?["reachable"] as? Bool == true, backlog)
        }
        let stored = try await http.nextSequence(central()) - 1
        var campaignDistinct = 0
        // The central relay forwards at background priority: beside a burner and a tier of
        // suites that takes minutes, so the wait lasts as long as Campaign's count moves.
        _ = try await waitWhileProgressing("Campaign to have every hit of the central log") {
            let hits = try await http.get(campaign + "/emulator/hits").body
            campaignDistinct = (try JSONSerialization.jsonObject(with: Data(hits.utf8)) as? [String: Any])?["distinct"] as? Int ?? -1
            return (campaignDistinct == stored, campaignDistinct)
        }
        if campaignDistinct != stored {
            // What the central relay's lane to Campaign was doing, for the failure.
            let status = (try? await http.get(central() + "/v1/status").body) ?? "?"
            let metrics = (try? await http.get(central() + "/metrics").body) ?? "?"
            let lanes = metrics.split(separator: "\n").filter { $0.hasPrefix("relay_upload") || $0.hasPrefix("relay_breaker") }.joined(
                separator: "\n")
            print(
                "Campaign has \(campaignDistinct) of the central log's \(stored); the central relay's status: \(status)\nits upload metrics: \(lanes)\nits output's end: \(centrals.last?.text.suffix(6000) ?? "")"
            )
        }
        let campaignHits = try await http.get(campaign + "/emulator/hits?messages=1").body
        await http.shutdown()
        await edges.last?.stop()
        await centrals.last?.stop()

        // The central log: every event the edge logged, once, at its edge sequence.
        let edgeDump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", edgeDirectory])
        let centralDump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", centralDirectory])
        #expect(edgeDump.status == 0 && centralDump.status == 0, "\(edgeDump.stderr) \(centralDump.stderr)")
        var edgeSequences: [Int: Int] = [:]
        for event in try Self.jsonLines(edgeDump.stdout) {
            let id = try #require(Self.number(event["messageId"] as? String ?? ""))
            #expect(edgeSequences.updateValue(event["seq"] as? Int ?? 0, forKey: id) == nil, "the edge logged \(id) twice")
        }
        var centralCount: [Int: Int] = [:]
        var expectedCounts: [String: [String: Int]] = [:]
        for event in try Self.jsonLines(centralDump.stdout) {
            let id = try #require(Self.number(event["messageId"] as? String ?? ""))
            centralCount[id, default: 0] += 1
            let origin = event["relayOrigin"] as? [String: Any]
            #expect(origin?["sequence"] as? Int == edgeSequences[id], "event \(id) carries its edge sequence")
            expectedCounts[event["deliveryId"] as? String ?? "", default: [:]][event["action"] as? String ?? "", default: 0] += 1
        }
        let duplicates = centralCount.values.filter { $0 > 1 }.count
        #expect(duplicates == 0, "\(duplicates) events twice at the central relay")
        #expect(Set(centralCount.keys) == Set(edgeSequences.keys), "the central relay holds exactly what the edge logged")
        let (acknowledged, attempted, failures) = load.state.withLockedValue { ($0.acknowledged, $0.attempted, $0.failures) }
        let missing = acknowledged.keys.filter { centralCount[$0] == nil }
        #expect(missing.isEmpty, "\(missing.count) acknowledged events missing at the central relay, e.g. \(missing.prefix(5))")
        #expect(centralCount.keys.allSatisfy { attempted.contains($0) }, "nothing invented")

        // The central relay's counts equal its log.
        let stats = try await RelayBinary.run(binary, ["stats", "--json", "--data-dir", centralDirectory])
        #expect(stats.status == 0, "\(stats.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
        var counted: [String: [String: Int]] = [:]
        for row in report["deliveries"] as? [[String: Any]] ?? [] {
            let id = row["deliveryId"] as? String ?? ""
            for (action, key) in [("impression", "impressions"), ("open", "opens")] where (row[key] as? Int ?? 0) > 0 {
                counted[id, default: [:]][action] = row[key] as? Int
            }
            #expect(row["uniqueOpens"] as? Int == row["opens"] as? Int && row["uniqueImpressions"] as? Int == row["impressions"] as? Int)
        }
        #expect(counted == expectedCounts)
        let origins = report["origins"] as? [[String: Any]] ?? []
        #expect(origins.count == 1 && origins.first?["events"] as? Int == centralCount.count, "\(origins)")
        #expect(origins.first?["lastSequence"] as? Int == edgeSequences.values.max())

        // Campaign received every hit of the central log (the uploader may send a few twice).
        let hits = try #require(try JSONSerialization.jsonObject(with: Data(campaignHits.utf8)) as? [String: Any])
        var received = Set<Int>()
        for message in hits["messages"] as? [[String: Any]] ?? [] {
            if let id = Int(message["messageId"] as? String ?? "", radix: 16) { received.insert(id) }
        }
        #expect(received == Set(centralCount.keys), "Campaign got \(received.count) distinct hits of \(centralCount.count)")

        for directory in [edgeDirectory, centralDirectory] {
            let verify = try await RelayBinary.run(binary, ["wal", "verify", "--json", "--data-dir", directory])
            #expect(verify.status == 0, "wal verify \(directory): \(verify.stdout) \(verify.stderr)")
        }
        let centralOutput = centrals.map(\.text).joined()
        let alreadyStored = centralOutput.components(separatedBy: "relay batch already stored").count - 1
        let partlyStored = centralOutput.components(separatedBy: "relay batch partly stored already").count - 1
        #expect(
            alreadyStored + partlyStored >= 1,
            "the re-send path never ran: no batch answered already (or partly) stored, though the edge was put back from \(rewound.map { "\($0.from) to \($0.to)" } ?? "?")"
        )
        print(
            "relay chain kill test: \(Self.kills) kills, \(acknowledged.count) events acknowledged (\(attempted.count) sent, \(failures) failed requests), \(centralCount.count) at the central relay, duplicates \(duplicates), the edge's relay cursor put back from \(rewound.map { "\($0.from) to \($0.to)" } ?? "?"), batches already stored \(alreadyStored), partly stored \(partlyStored), hits Campaign got twice \(hits["duplicates"] ?? "?")"
        )
    }
}

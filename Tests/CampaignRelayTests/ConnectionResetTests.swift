import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// Peers that reset connections (RST) in the middle of a message, from Scripts/reset_peer.py: a
/// client that sends half a body and resets, a central relay and a Campaign host whose answers are
/// cut in the middle by a reset. The relay neither crashes nor loses what it acknowledged, stores
/// nothing of a half body, keeps serving, and delivers everything: retried batches are recognised
/// by the central relay (nothing appended twice), and a hit reaches Campaign twice only when an
/// attempt at it failed (duplicates ≤ the uploader's retries, and ≤ the answers cut).
@Suite("Connections reset mid-message", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
struct ConnectionResetTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/reset_peer.py").path
    static let relayToken = "relay-token-0123456789"

    static func startRelay(_ binary: String, _ arguments: [String]) async throws -> (ChildProcess, String) {
        let child = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0"] + arguments)
        let port = try await child.await(#"address=127\.0\.0\.1:(\d+)"#)
        return (child, "http://127.0.0.1:\(port)")
    }

    /// A forwarder to `url` that resets every `every`-th chunk of answer in its middle.
    static func startResettingProxy(to url: String, every: Int) async throws -> (ChildProcess, String) {
        let target = try #require(URL(string: url))
        let proxy = try ChildProcess("/usr/bin/env", ["python3", script, "proxy", target.host ?? "", String(target.port ?? 80), String(every)])
        let port = try await proxy.await(#"listening (\d+)"#)
        return (proxy, "http://127.0.0.1:\(port)")
    }

    static func resets(_ proxy: ChildProcess) -> Int { proxy.text.components(separatedBy: "reset ").count - 1 }

    @Test(
        "rounds of 300 clients send half a body and reset: nothing of them stored, a real client beside them never fails, acknowledged events all logged once"
    )
    func clientResetsMidBody() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("reset-client")
        defer { removeTree(directory) }
        let (relay, url) = try await Self.startRelay(binary, ["--data-dir", directory])
        defer { relay.stopWithoutWaiting() }
        let http = TestHTTPClient()
        let load = NetworkFaultLoad()
        let clients = Task { await load.run(url: url, clients: 1, http: http) }

        let port = try #require(URL(string: url)?.port)
        // The resets start once the real client is being served: on a loaded machine its first
        // answer (a new connection, the log's first fdatasync) can take longer than 300 resets,
        // and a client not served yet says nothing of being served while they happen.
        try await waitUntil("the real client's first acknowledgement", seconds: 60) { load.acknowledgedCount > 0 }
        // Rounds of 300 resets until the real client was served during one, 10 at most: on a CI
        // machine beside a CPU burner, a first round was over before the client's next answer.
        var acknowledgedDuringResets = 0
        var rounds = 0
        repeat {
            let acknowledgedBeforeResets = load.acknowledgedCount
            let resetting = try await RelayBinary.run("/usr/bin/env", ["python3", Self.script, "half-body", String(port), "300"], seconds: 60)
            try #require(resetting.status == 0, "reset_peer.py: \(resetting.stderr)")
            acknowledgedDuringResets += load.acknowledgedCount - acknowledgedBeforeResets
            rounds += 1
        } while acknowledgedDuringResets == 0 && rounds < 10
        // Then until the real client has more than 100 events acknowledged: on a loaded CI machine
        // the 300 resets were over after 80 (the rate of both depends on the machine), and the
        // floor is there to show the client ran, not how fast. 30 s at most.
        try await Task.sleep(for: .milliseconds(500))
        let deadline = ContinuousClock.now + .seconds(30)
        while load.state.withLockedValue({ $0.acknowledged.count }) <= 100, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        load.stop()
        await clients.value
        #expect(relay.process.isRunning, "the relay died: \(relay.text.suffix(2000))")
        #expect(try await http.get(url + "/healthz").status == 200)
        await http.shutdown()
        await relay.stop()

        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", directory])
        try #require(dump.status == 0, "\(dump.stderr)")
        let logged = try NetworkFaultLoad.loggedIds(dump.stdout)
        let (acknowledged, failures) = load.state.withLockedValue { ($0.acknowledged, $0.failures) }
        #expect(failures == 0, "the real client failed \(failures) times")
        #expect(acknowledged.count > 100)
        #expect(acknowledgedDuringResets > 0, "the real client must be served while the resets happen")
        #expect(Set(logged.keys) == acknowledged && logged.values.allSatisfy { $0 == 1 }, "the log holds exactly the acknowledged events, once")
        #expect(logged.keys.filter { $0 >= 900_000_000 }.isEmpty, "nothing of a half body is stored")
        print(
            "client resets mid-body: \(rounds * 300) resets, \(acknowledgedDuringResets) events acknowledged during them and \(acknowledged.count) in all, \(failures) failures, \(logged.count) logged"
        )
    }

    @Test("a central relay whose answers are reset mid-response: the edge retries, the central log holds every acknowledged event once")
    func centralResetsMidResponse() async throws {
        let binary = try RelayBinary.path()
        let root = temporaryDirectory("reset-central")
        defer { removeTree(root) }
        let (central, centralURL) = try await Self.startRelay(binary, ["--data-dir", "\(root)/central", "--relay-token", Self.relayToken])
        defer { central.stopWithoutWaiting() }
        let (proxy, proxyURL) = try await Self.startResettingProxy(to: centralURL, every: 2)
        defer { proxy.stopWithoutWaiting() }
        let (edge, edgeURL) = try await Self.startRelay(
            binary,
            [
                "--data-dir", "\(root)/edge", "--upstream-relay", proxyURL, "--upstream-token", Self.relayToken, "--backoff-cap", "0.2",
                "--request-timeout", "3",
            ])
        defer { edge.stopWithoutWaiting() }

        let http = TestHTTPClient()
        let load = NetworkFaultLoad()
        let clients = Task { await load.run(url: edgeURL, http: http) }
        try await Task.sleep(for: .seconds(8))
        load.stop()
        await clients.value
        try await waitUntil("the edge to have handed everything on", seconds: 60) {
            try await http.get(edgeURL + "/readyz").body.contains(#""backlog":0"#)
        }
        #expect(edge.process.isRunning && central.process.isRunning)
        #expect(try await http.get(edgeURL + "/healthz").status == 200)
        await http.shutdown()
        await edge.stop()
        await central.stop()

        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", "\(root)/central"])
        try #require(dump.status == 0, "\(dump.stderr)")
        let logged = try NetworkFaultLoad.loggedIds(dump.stdout)
        let (acknowledged, attempted) = load.state.withLockedValue { ($0.acknowledged, $0.attempted) }
        let resets = Self.resets(proxy)
        let alreadyStored = central.text.components(separatedBy: "relay batch already stored").count - 1
        let partlyStored = central.text.components(separatedBy: "relay batch partly stored already").count - 1
        #expect(resets >= 3, "the proxy must have reset answers: \(resets)")
        #expect(alreadyStored + partlyStored >= 1, "a batch whose answer was cut is sent again and recognised")
        #expect(acknowledged.isSubset(of: Set(logged.keys)), "\(acknowledged.subtracting(logged.keys).count) acknowledged events missing")
        #expect(Set(logged.keys).isSubset(of: attempted))
        let duplicates = logged.values.filter { $0 > 1 }.count
        #expect(duplicates == 0, "\(duplicates) events twice in the central log")
        print(
            "central resets mid-response: \(resets) resets, \(acknowledged.count) acknowledged, \(logged.count) at the central relay, duplicates \(duplicates), batches already stored \(alreadyStored), partly stored \(partlyStored)"
        )
    }

    @Test("Campaign's answers reset mid-response: every hit delivered, duplicates ≤ answers cut, the relay keeps serving")
    func campaignResetsMidResponse() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("reset-campaign")
        defer { removeTree(directory) }
        let emulator = try ChildProcess(binary, ["emulate", "--bind", "127.0.0.1:0", "--json"])
        defer { emulator.stopWithoutWaiting() }
        let campaign = try await emulator.await(#""url":"([^"]+)""#)
        let (proxy, proxyURL) = try await Self.startResettingProxy(to: campaign, every: 7)
        defer { proxy.stopWithoutWaiting() }
        let (relay, url) = try await Self.startRelay(
            binary,
            [
                "--data-dir", directory, "--tracking-host", proxyURL, "--marketing-host", proxyURL, "--backoff-cap", "0.2", "--request-timeout", "3",
            ])
        defer { relay.stopWithoutWaiting() }

        let http = TestHTTPClient()
        let load = NetworkFaultLoad()
        let clients = Task { await load.run(url: url, http: http) }
        try await Task.sleep(for: .seconds(8))
        load.stop()
        await clients.value
        let stored = try #require(NetworkFaultLoad.field("lastDurableSequence", try await http.get(url + "/readyz").body))
        // Forwarding at background priority beside a burner and the thorough tier took more than a
        // minute in a CI run (1,575 of 1,620, still moving): the wait lasts while the drain moves.
        _ = try await waitWhileProgressing("Campaign to have all \(stored) events") {
            let distinct = NetworkFaultLoad.field("distinct", try await http.get(campaign + "/emulator/hits").body)
            return (distinct == stored, distinct ?? 0)
        }
        let received = try NetworkFaultLoad.receivedIds(try await http.get(campaign + "/emulator/hits?messages=1").body)
        // The lanes count deliveries and retries as they happen; the scrape that shows every
        // event delivered also holds every retry made before the last delivery.
        try await waitUntil("the metrics to show all \(stored) events delivered", seconds: 30) {
            RelayChainKillTests.sum("relay_upload_delivered_total", in: try await http.get(url + "/metrics").body) >= stored
        }
        let retries = RelayChainKillTests.sum("relay_upload_retries_total", in: try await http.get(url + "/metrics").body)
        #expect(relay.process.isRunning)
        #expect(try await http.get(url + "/healthz").status == 200)
        await http.shutdown()
        await relay.stop()

        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", directory])
        try #require(dump.status == 0, "\(dump.stderr)")
        let logged = try NetworkFaultLoad.loggedIds(dump.stdout)
        let acknowledged = load.state.withLockedValue { $0.acknowledged }
        let resets = Self.resets(proxy)
        #expect(resets >= 5, "the proxy must have reset answers: \(resets)")
        #expect(acknowledged.isSubset(of: Set(logged.keys)) && logged.values.allSatisfy { $0 == 1 })
        #expect(Set(received.keys) == Set(logged.keys), "Campaign got \(received.count) distinct of \(logged.count)")
        let duplicates = received.values.reduce(0) { $0 + $1 - 1 }
        // A hit goes out again only after an attempt at it failed, and a cut answer fails one attempt.
        #expect(duplicates <= retries && duplicates <= resets, "\(duplicates) hits sent twice; \(retries) retries, \(resets) answers cut")
        print(
            "Campaign resets mid-response: \(resets) resets, \(acknowledged.count) acknowledged, \(logged.count) logged, all delivered, hits sent twice \(duplicates), uploader retries \(retries)"
        )
    }
}

import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Real processes in network namespaces of the test's own, with 20% packet loss, 300 ms of delay
/// and a 10 s silent partition, in turn, on the link between a relay and the next hop while clients
/// keep sending: a relay forwarding to Campaign (`emulate`), and an edge relay handing its log to a
/// central relay. Nothing acknowledged is lost, the chain appends nothing twice, a hit reaches
/// Campaign twice only after an attempt at it failed (duplicates ≤ the uploader's retries: its
/// at-least-once bound outside crashes, which `--max-unsynced` bounds), and everything arrives once
/// the link heals.
/// How the faults are made (netfilter; these kernels have no netem): ``NamespaceLink``.
@Suite("Network faults: loss, delay, partition", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
struct NetworkFaultTests {
    static let phases: [(NamespaceLink.Fault, Duration)] = [
        (.loss(percent: 20), .seconds(8)), (.delay(milliseconds: 300), .seconds(8)), (.partition, .seconds(10)),
    ]
    static let adminToken = "admin-token-0123456789"
    static let relayToken = "relay-token-0123456789"

    /// How far the next hop got at the start and end of a phase (events it holds).
    struct PhaseProgress: CustomStringConvertible {
        var fault: NamespaceLink.Fault
        var atStart: Int
        /// One second in: what was on its way when the fault began has arrived.
        var afterOneSecond: Int
        var atEnd: Int
        var acknowledged: Int

        var description: String { "\(fault): next hop \(atStart) → \(atEnd), \(acknowledged) acknowledged by the relay" }
    }

    /// Applies each fault of ``phases`` in turn for its time, reading `progress` (the events the
    /// next hop holds) at its start, one second in and at its end, then heals the link.
    static func runPhases(_ link: NamespaceLink, load: NetworkFaultLoad, progress: () async throws -> Int) async throws -> [PhaseProgress] {
        var measured: [PhaseProgress] = []
        for (fault, duration) in phases {
            let start = try await progress()
            let acknowledged = load.acknowledgedCount
            try await link.apply(fault)
            try await Task.sleep(for: .seconds(1))
            let oneSecond = try await progress()
            try await Task.sleep(for: duration - .seconds(1))
            measured.append(
                PhaseProgress(
                    fault: fault, atStart: start, afterOneSecond: oneSecond, atEnd: try await progress(),
                    acknowledged: load.acknowledgedCount - acknowledged))
        }
        try await link.apply(.none)
        return measured
    }

    /// The faults really were on the link (else the test proves nothing): under loss and delay the
    /// next hop still moves on, under the partition it holds still, and the relay acknowledged
    /// events throughout.
    static func expectFaultsTookHold(_ measured: [PhaseProgress]) {
        for phase in measured {
            #expect(phase.acknowledged > 100, "the relay kept acknowledging during \(phase)")
            if case .partition = phase.fault {
                #expect(phase.atEnd == phase.afterOneSecond, "nothing crosses a partition: \(phase)")
            } else {
                #expect(phase.atEnd > phase.atStart, "forwarding goes on under \(phase)")
            }
        }
    }

    @Test(
        "relay → Campaign: 20% loss, 300 ms delay, a 10 s partition; nothing acknowledged lost, logged once, all forwarded, duplicates ≤ failed attempts"
    )
    func uploaderThroughFaults() async throws {
        let binary = try RelayBinary.path()
        let link = try await NamespaceLink.make(tag: "u")
        defer { link.removeWithoutWaiting() }
        let directory = temporaryDirectory("netfault-upload")
        defer { removeTree(directory) }

        let emulator = try ChildProcess(NamespaceLink.ip, link.inside(link.far, [binary, "emulate", "--bind", "\(link.farAddress):0", "--json"]))
        defer { emulator.stopWithoutWaiting() }
        let campaign = try await emulator.await(#""url":"([^"]+)""#)
        let relay = try ChildProcess(
            NamespaceLink.ip,
            link.inside(
                link.near,
                [
                    binary, "serve", "--bind", "\(link.nearFromHost):0", "--admin-token", Self.adminToken, "--data-dir", directory, "--tracking-host",
                    campaign, "--marketing-host", campaign, "--request-timeout", "3", "--backoff-cap", "1",
                ]))
        defer { relay.stopWithoutWaiting() }
        let url = "http://\(link.nearFromHost):\(try await relay.await(#"address=[0-9.]+:(\d+)"#))"

        let http = TestHTTPClient()
        let load = NetworkFaultLoad()
        let clients = Task { await load.run(url: url, http: http) }
        let hits = { try await link.get(in: link.far, campaign + "/emulator/hits") }
        let distinct = { NetworkFaultLoad.field("distinct", try await hits()) ?? -1 }
        try await Task.sleep(for: .seconds(1))
        let measured = try await Self.runPhases(link, load: load, progress: distinct)
        load.stop()
        await clients.value

        // Healed: everything the relay stored reaches Campaign.
        let healed = Date()
        let stored = try #require(NetworkFaultLoad.field("lastDurableSequence", try await http.get(url + "/readyz").body))
        try await waitUntil("Campaign to have all \(stored) events", seconds: 120) { try await distinct() == stored }
        let drainSeconds = Date().timeIntervalSince(healed)
        let received = try NetworkFaultLoad.receivedIds(try await link.get(in: link.far, campaign + "/emulator/hits?messages=1"))
        let metrics = try await http.get(url + "/metrics", headers: [("Authorization", "Bearer \(Self.adminToken)")]).body
        let retries = RelayChainKillTests.sum("relay_upload_retries_total", in: metrics)
        await http.shutdown()
        await relay.stop()
        await emulator.stop()
        await link.remove()

        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", directory])
        try #require(dump.status == 0, "\(dump.stderr)")
        let logged = try NetworkFaultLoad.loggedIds(dump.stdout)
        let (acknowledged, attempted, failures) = load.state.withLockedValue { ($0.acknowledged, $0.attempted, $0.failures) }
        let lost = acknowledged.filter { logged[$0] == nil }
        #expect(lost.isEmpty, "\(lost.count) acknowledged events not in the log, e.g. \(lost.prefix(5))")
        #expect(logged.values.allSatisfy { $0 == 1 }, "events logged twice: \(logged.filter { $0.value > 1 }.prefix(5))")
        #expect(logged.count == stored && Set(logged.keys).isSubset(of: attempted))
        #expect(Set(received.keys) == Set(logged.keys), "Campaign got \(received.count) distinct of \(logged.count) logged")
        let duplicates = received.values.reduce(0) { $0 + $1 - 1 }
        #expect(duplicates <= retries, "\(duplicates) hits sent twice, more than the \(retries) failed attempts")
        #expect(retries > 0, "the faults made attempts fail")
        Self.expectFaultsTookHold(measured)
        let verify = try await RelayBinary.run(binary, ["wal", "verify", "--data-dir", directory])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        print(
            "network faults, relay → Campaign: \(measured.map(\.description).joined(separator: "; ")); \(acknowledged.count) acknowledged (\(failures) failed requests), \(logged.count) logged, lost \(lost.count), hits sent twice \(duplicates) (uploader retries \(retries)), drained \(String(format: "%.1f", drainSeconds)) s after healing"
        )
    }

    @Test("edge → central: 20% loss, 300 ms delay, a 10 s partition; every acknowledged event once at the central relay, 0 duplicates")
    func chainThroughFaults() async throws {
        let binary = try RelayBinary.path()
        let link = try await NamespaceLink.make(tag: "c")
        defer { link.removeWithoutWaiting() }
        let root = temporaryDirectory("netfault-chain")
        defer { removeTree(root) }
        let (edgeDirectory, centralDirectory) = ("\(root)/edge", "\(root)/central")

        let emulator = try ChildProcess(NamespaceLink.ip, link.inside(link.far, [binary, "emulate", "--bind", "127.0.0.1:0", "--json"]))
        defer { emulator.stopWithoutWaiting() }
        let campaign = try await emulator.await(#""url":"([^"]+)""#)
        let central = try ChildProcess(
            NamespaceLink.ip,
            link.inside(
                link.far,
                [
                    binary, "serve", "--bind", "\(link.farAddress):0", "--admin-token", Self.adminToken, "--data-dir", centralDirectory,
                    "--relay-token",
                    Self.relayToken, "--tracking-host", campaign, "--marketing-host", campaign, "--backoff-cap", "1",
                ]))
        defer { central.stopWithoutWaiting() }
        let centralURL = "http://\(link.farAddress):\(try await central.await(#"address=[0-9.]+:(\d+)"#))"
        let edge = try ChildProcess(
            NamespaceLink.ip,
            link.inside(
                link.near,
                [
                    binary, "serve", "--bind", "\(link.nearFromHost):0", "--admin-token", Self.adminToken, "--data-dir", edgeDirectory,
                    "--upstream-relay",
                    centralURL, "--upstream-token", Self.relayToken, "--request-timeout", "3", "--backoff-cap", "1",
                ]))
        defer { edge.stopWithoutWaiting() }
        let edgeURL = "http://\(link.nearFromHost):\(try await edge.await(#"address=[0-9.]+:(\d+)"#))"

        let http = TestHTTPClient()
        let load = NetworkFaultLoad()
        let clients = Task { await load.run(url: edgeURL, http: http) }
        let centralStored = { NetworkFaultLoad.field("lastDurableSequence", try await link.get(in: link.far, centralURL + "/readyz")) ?? -1 }
        try await Task.sleep(for: .seconds(1))
        let measured = try await Self.runPhases(link, load: load, progress: centralStored)
        load.stop()
        await clients.value

        let healed = Date()
        let edgeStored = try #require(NetworkFaultLoad.field("lastDurableSequence", try await http.get(edgeURL + "/readyz").body))
        try await waitUntil("the edge to have handed everything on", seconds: 120) {
            let body = try await http.get(edgeURL + "/readyz").body
            return body.contains(#""backlog":0"#) && body.contains(#""reachable":true"#)
        }
        let drainSeconds = Date().timeIntervalSince(healed)
        let stored = try await centralStored()
        try await waitUntil("Campaign to have all \(stored) events of the central relay", seconds: 120) {
            NetworkFaultLoad.field("distinct", try await link.get(in: link.far, campaign + "/emulator/hits")) == stored
        }
        await http.shutdown()
        await edge.stop()
        await central.stop()
        await emulator.stop()
        await link.remove()

        let edgeDump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", edgeDirectory])
        let centralDump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", centralDirectory])
        try #require(edgeDump.status == 0 && centralDump.status == 0, "\(edgeDump.stderr) \(centralDump.stderr)")
        let edgeLogged = try NetworkFaultLoad.loggedIds(edgeDump.stdout)
        let centralLogged = try NetworkFaultLoad.loggedIds(centralDump.stdout)
        let (acknowledged, failures) = load.state.withLockedValue { ($0.acknowledged, $0.failures) }
        let lost = acknowledged.filter { centralLogged[$0] == nil }
        let duplicates = centralLogged.values.filter { $0 > 1 }.count
        #expect(lost.isEmpty, "\(lost.count) events the edge acknowledged are not at the central relay, e.g. \(lost.prefix(5))")
        #expect(duplicates == 0, "\(duplicates) events twice in the central log")
        #expect(Set(centralLogged.keys) == Set(edgeLogged.keys) && edgeLogged.count == edgeStored && stored == edgeStored)
        Self.expectFaultsTookHold(measured)
        for directory in [edgeDirectory, centralDirectory] {
            let verify = try await RelayBinary.run(binary, ["wal", "verify", "--data-dir", directory])
            #expect(verify.status == 0, "wal verify \(directory): \(verify.stdout) \(verify.stderr)")
        }
        let alreadyStored = central.text.components(separatedBy: "relay batch already stored").count - 1
        let partlyStored = central.text.components(separatedBy: "relay batch partly stored already").count - 1
        print(
            "network faults, edge → central: \(measured.map(\.description).joined(separator: "; ")); \(acknowledged.count) acknowledged (\(failures) failed requests), \(centralLogged.count) at the central relay, lost \(lost.count), duplicates \(duplicates), batches already stored \(alreadyStored), partly stored \(partlyStored), drained \(String(format: "%.1f", drainSeconds)) s after healing"
        )
    }
}

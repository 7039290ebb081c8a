import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 40's failure runs, with real processes: three `serve` relays on one log in a replicated
/// PostgreSQL (a primary and a synchronous standby, ``ReplicatedTestPostgres``), behind no
/// balancer, under SDK load spread over all three; a relay killed for good, the primary killed
/// and the standby promoted, a relay frozen past its lease. And the relay chain with its central
/// relay on PostgreSQL. Each relay's output is in `rN.log` beside its data directory.
@Suite("High availability: the log on replicated PostgreSQL", .serialized, .timeLimit(.minutes(20)), .tier(.thorough))
struct HighAvailabilityTests {
    @Test(
        "three relays on a replicated log: one dies for good, the primary dies, one is frozen past its lease; every acknowledged hit reaches Campaign, duplicates within the documented bound, fleet counts exact"
    )
    func failureRuns() async throws {
        let binary = try RelayBinary.path()
        let cluster = try await ReplicatedTestPostgres.start()
        let root = temporaryDirectory("high-availability")
        var emulators: [RunningEmulator] = []
        let http = TestHTTPClient()
        do {
            for _ in 0..<HighAvailabilityFleet.relayCount { emulators.append(try await RunningEmulator.start()) }
            let fleet = HighAvailabilityFleet(binary: binary, root: root, url: cluster.url, emulators: emulators)
            defer { fleet.killAll() }
            for relay in 0..<HighAvailabilityFleet.relayCount { try await fleet.start(relay) }
            let load = Task { await fleet.runLoad(http) }
            defer { fleet.load.stopping.store(true, ordering: .relaxed) }
            var record = Record()
            do {
                try await warmUp(fleet, cluster, http, &record)
                await record.countDuplicates(fleet, "warm-up")
                try await relayDiesForGood(fleet, cluster, &record)
                await record.countDuplicates(fleet, "a relay killed for good")
                // The partition before the primary's death: a relay stalled by the failover
                // would hide whether it respects a lapsed lease.
                try await partition(fleet, cluster.primary, &record)
                await record.countDuplicates(fleet, "the partition and handback")
                try await primaryDies(fleet, cluster, &record)
                await record.countDuplicates(fleet, "the primary's death")
                fleet.load.stopping.store(true, ordering: .relaxed)
                await load.value
                try await finalChecks(fleet, cluster, record)
            } catch {
                Issue.record("stopped at \(error); \(await HighAvailabilityFleet.databaseState(cluster)); the relays' logs:\n\(fleet.logs())")
            }
            for relay in 0..<HighAvailabilityFleet.relayCount { await fleet.child(relay)?.stop() }
        } catch {
            Issue.record("\(error)")
        }
        await http.shutdown()
        for emulator in emulators { await emulator.stop() }
        await cluster.destroy()
        // The logs stay (a failure's evidence); the data directories go.
        for relay in 0..<HighAvailabilityFleet.relayCount { removeTree("\(root)/\(HighAvailabilityFleet.name(relay))") }
        print("high availability: relay logs in \(root)")
    }

    /// Every relay takes hits and forwards them; each says its log has 2 copies; each holds its lease.
    func warmUp(_ fleet: HighAvailabilityFleet, _ cluster: ReplicatedTestPostgres, _ http: TestHTTPClient, _ record: inout Record) async throws {
        for relay in 0..<HighAvailabilityFleet.relayCount {
            try await eventually("\(HighAvailabilityFleet.name(relay)) to acknowledge 200 hits and forward 50", seconds: 120) {
                try fleet.ensureRunning()
                let forwarded = await fleet.emulators[relay].emulator.recorder.distinctHits
                return fleet.load.acknowledged(relay).count >= 200 && forwarded >= 50
            }
            try await eventually("\(HighAvailabilityFleet.name(relay)) to say its log is in PostgreSQL, 2 copies (primary and synchronous standby)") {
                try fleet.ensureRunning()
                let log = try await fleet.logStatus(relay, http)
                return log["store"] as? String == "postgresql" && log["copies"] as? Int == 2
            }
        }
        let names = (0..<HighAvailabilityFleet.relayCount).map(HighAvailabilityFleet.name)
        try await eventually("every relay to hold its stream's lease") {
            try fleet.ensureRunning()
            let leases = try await HighAvailabilityFleet.leases(cluster.primary)
            return names.allSatisfy { leases[$0] != nil }
        }
        record.tokensAtStart = try await HighAvailabilityFleet.leases(cluster.primary).mapValues(\.token)
    }

    /// 1. Under load, r3 is killed -9 and its data directory deleted: another relay adopts its
    /// stream within the lease, and Campaign receives every hit r3 acknowledged.
    func relayDiesForGood(_ fleet: HighAvailabilityFleet, _ cluster: ReplicatedTestPostgres, _ record: inout Record) async throws {
        let victim = 2
        let stream = HighAvailabilityFleet.name(victim)
        let before = fleet.load.acknowledged(victim).count
        try await eventually("300 more hits acknowledged by \(stream) (the load the kill lands in)", seconds: 120) {
            try fleet.ensureRunning()
            return fleet.load.acknowledged(victim).count >= before + 300
        }
        let holder = try #require(try await HighAvailabilityFleet.leases(cluster.primary)[stream]?.holder)
        await fleet.child(victim)?.kill9()
        let killed = ContinuousClock.now
        fleet.load.markGone(victim)
        removeTree(fleet.dataDirectory(victim))
        let acknowledged = fleet.load.acknowledged(victim)
        try await eventually("another relay to take \(stream)'s lease") {
            try fleet.ensureRunning()
            return try await HighAvailabilityFleet.leases(cluster.primary)[stream].map { $0.holder != holder } ?? false
        }
        let adoption = ContinuousClock.now - killed
        // Expiry (a lease after the last renewal) plus a scan (every lease/3): about 4 s; five
        // leases leave room for a loaded machine.
        #expect(adoption < .seconds(5 * HighAvailabilityFleet.leaseSeconds), "\(stream)'s stream adopted only after \(adoption)")
        try await fleet.waitForCampaign("every hit \(stream) acknowledged (\(acknowledged.count))", acknowledged)
        record.notes.append("\(stream) killed: its stream adopted after \(adoption), its \(acknowledged.count) acknowledged hits all in Campaign")
    }

    /// 2. Under load, the primary is killed -9 and the standby promoted: the relays answer 503
    /// while no primary is writable, 200 again without a restart; every hit acknowledged before
    /// the kill reaches Campaign (what Campaign lacked at the kill can only come from the
    /// promoted database).
    func primaryDies(_ fleet: HighAvailabilityFleet, _ cluster: ReplicatedTestPostgres, _ record: inout Record) async throws {
        let live = [0, 1]
        let before = live.map { fleet.load.acknowledged($0).count }
        try await eventually("300 more hits acknowledged by each live relay", seconds: 120) {
            try fleet.ensureRunning()
            return live.indices.allSatisfy { fleet.load.acknowledged(live[$0]).count >= before[$0] + 300 }
        }
        let refusedBefore = live.map(fleet.load.unavailable)
        let acknowledgedBeforeKill = fleet.load.acknowledged
        let pending = acknowledgedBeforeKill.subtracting(await fleet.received())
        try await cluster.killPrimary()
        // Ten refusals each: by then the requests under way at the kill have their answers.
        try await eventually("every live relay to answer 503 with no writable primary") {
            try fleet.ensureRunning()
            return live.indices.allSatisfy { fleet.load.unavailable(live[$0]) >= refusedBefore[$0] + 10 }
        }
        let acknowledgedInOutage = fleet.load.acknowledged.count
        let refusedInOutage = live.map(fleet.load.unavailable)
        try await eventually("5 more 503s each, the relays still without a primary") {
            try fleet.ensureRunning()
            return live.indices.allSatisfy { fleet.load.unavailable(live[$0]) >= refusedInOutage[$0] + 5 }
        }
        #expect(fleet.load.acknowledged.count == acknowledgedInOutage, "a 200 while no primary was writable")
        try await cluster.promoteStandby()
        let promoted = ContinuousClock.now
        let atPromotion = live.map { fleet.load.acknowledged($0).count }
        try await eventually("every live relay to answer 200 again, not restarted", seconds: 120) {
            try fleet.ensureRunning()
            return live.indices.allSatisfy { fleet.load.acknowledged(live[$0]).count >= atPromotion[$0] + 50 }
        }
        let back = ContinuousClock.now - promoted
        #expect(live.allSatisfy { fleet.child($0)?.process.isRunning == true }, "the relays ran through the failover")
        try await fleet.waitForCampaign("every hit acknowledged before the primary's kill", acknowledgedBeforeKill)
        record.notes.append(
            "primary killed: \(pending.count) acknowledged hits not yet in Campaign at the kill, all delivered from the promoted standby; 200s again \(back) after the promotion"
        )
    }

    /// 3. r2 is frozen (SIGSTOP) past its lease while its Campaign refuses (so it has a backlog),
    /// its stream adopted and forwarded by another relay, then woken (SIGCONT) with its Campaign
    /// answering: it must not send what the adopter sent, and takes its stream back.
    func partition(_ fleet: HighAvailabilityFleet, _ database: TestPostgres, _ record: inout Record) async throws {
        let frozen = 1
        let stream = HighAvailabilityFleet.name(frozen)
        let campaign = fleet.emulators[frozen].emulator
        var refusing = EmulatorFaults()
        refusing.unavailableUntil = Date().timeIntervalSince1970 + 3600
        refusing.retryAfterSeconds = 1
        campaign.currentFaults = refusing
        let before = fleet.load.acknowledged(frozen).count
        try await eventually("a backlog of 300 hits at \(stream) while its Campaign refuses", seconds: 120) {
            try fleet.ensureRunning()
            return fleet.load.acknowledged(frozen).count >= before + 300
        }
        let owner = try #require(try await HighAvailabilityFleet.leases(database)[stream]?.holder)
        let child = try #require(fleet.child(frozen))
        kill(child.process.processIdentifier, SIGSTOP)
        let stopped = ContinuousClock.now
        campaign.currentFaults = EmulatorFaults()
        defer { kill(child.process.processIdentifier, SIGCONT) }  // a relay left stopped would never exit on SIGTERM
        try await eventually("another relay to take the frozen \(stream)'s lease") {
            try fleet.ensureRunning()
            return try await HighAvailabilityFleet.leases(database)[stream].map { $0.holder != owner } ?? false
        }
        let adoption = ContinuousClock.now - stopped
        let backlog = fleet.load.acknowledged(frozen)
        try await fleet.waitForCampaign("\(stream)'s acknowledged hits, from the relay that adopted its stream", backlog)
        let adopterSent = Set(await fleet.receipts().enumerated().filter { $0.offset != frozen }.flatMap { $0.element.keys })
        let frozenSentBefore = Set(await fleet.receipts()[frozen].keys)
        kill(child.process.processIdentifier, SIGCONT)
        let woken = ContinuousClock.now
        let wokenAt = Date().timeIntervalSince1970
        try await eventually("\(stream) to take its stream back") {
            try fleet.ensureRunning()
            return try await HighAvailabilityFleet.leases(database)[stream]?.holder == owner
        }
        let handBack = ContinuousClock.now - woken
        // Seen by a poll, so no earlier than the retaking: what Campaign got before it bounds what was sent without the lease.
        let takenBackAt = Date().timeIntervalSince1970
        let acknowledgedAtWaking = fleet.load.acknowledged(frozen).count
        try await eventually("\(stream) to take hits again", seconds: 120) {
            try fleet.ensureRunning()
            return fleet.load.acknowledged(frozen).count >= acknowledgedAtWaking + 100
        }
        try await fleet.waitForCampaign("every hit \(stream) acknowledged", fleet.load.acknowledged(frozen))
        let frozenSentAfter = Set(await fleet.receipts()[frozen].keys).subtracting(frozenSentBefore)
        let resent = frozenSentAfter.intersection(adopterSent)
        record.resentAfterWaking = resent.count
        // When: before it held its lease again (sent without a lease), or after (the handback
        // lost the adopter's progress).
        let beforeLease = await campaign.recorder.lastRequests(campaign.recorder.keptRequests).filter { request in
            guard request.status == 200, request.time >= wokenAt, request.time < takenBackAt,
                let id = request.uri.firstMatch(of: /id=h([0-9a-f]+),/).flatMap({ Int($0.output.1, radix: 16) })
            else { return false }
            return resent.contains(id)
        }.count
        // Woken past its lease, it starts no request (what was under way at the freeze may end);
        // after the handback it sends again only what the adopter had under way, cancelled.
        #expect(
            beforeLease <= HighAvailabilityFleet.underWay,
            "\(stream), woken after losing its lease, sent \(beforeLease) hits the adopter had sent before it held its lease again (bound: \(HighAvailabilityFleet.underWay) under way at the freeze)"
        )
        #expect(
            record.resentAfterWaking - beforeLease <= HighAvailabilityFleet.underWay,
            "after the handback \(stream) sent \(record.resentAfterWaking - beforeLease) hits the adopter had sent (bound: the adopter's \(HighAvailabilityFleet.underWay) under way)"
        )
        record.notes.append(
            "\(stream) frozen: adopted after \(adoption), backlog \(backlog.count) forwarded by the adopter, taken back \(handBack) after waking; \(record.resentAfterWaking) adopted hits sent again by \(stream)"
        )
    }

    /// 4. Every acknowledged hit reached Campaign; nothing invented; duplicates within the
    /// in-flight bound of the handovers (printed); `stats --postgres-url` counts exactly what
    /// the log holds, which includes every acknowledged hit.
    func finalChecks(_ fleet: HighAvailabilityFleet, _ cluster: ReplicatedTestPostgres, _ record: Record) async throws {
        let acknowledged = fleet.load.acknowledged
        let attempted = fleet.load.attempted
        try await fleet.waitForCampaign("every acknowledged hit", acknowledged, seconds: 300)
        // The log also holds hits whose answer was lost (a relay killed under them): Campaign
        // gets them too, and the counts must equal what Campaign got, each once.
        var counted: [String: [String: Int]] = [:]
        var received = Set<Int>()
        try await waitUntil("the fleet counts to equal the hits Campaign received", seconds: 180) {
            received = await fleet.received()
            counted = try await FleetPostgresTests.fleetCounts(fleet.binary, fleet.url).0.totals
            if counted == HitLoad.counts(received) { return true }
            try await Task.sleep(for: .seconds(1))
            return false
        }
        #expect(counted == HitLoad.counts(received), "stats --postgres-url \(fleet.url): the counts of the log, against the hits Campaign received")
        let (fleetCounts, _) = try await FleetPostgresTests.fleetCounts(fleet.binary, fleet.url)
        #expect(fleetCounts.uniqueCounts == fleetCounts.totals, "every hit has an id of its own: uniques equal totals")
        #expect(acknowledged.isSubset(of: received), "\(acknowledged.subtracting(received).count) acknowledged hits never reached Campaign")
        #expect(received.isSubset(of: attempted), "Campaign got hits nobody sent: \(received.subtracting(attempted).prefix(5))")
        let receipts = await fleet.receipts()
        var times: [Int: Int] = [:]
        for emulator in receipts { for (id, count) in emulator { times[id, default: 0] += count } }
        let duplicates = times.values.reduce(0) { $0 + $1 - 1 }
        let sentByTwoRelays = times.keys.filter { id in receipts.filter { $0[id] != nil }.count > 1 }.count
        let tokensAtEnd = try await HighAvailabilityFleet.leases(cluster.standby).mapValues(\.token)
        let handovers = tokensAtEnd.reduce(0) { $0 + max(0, $1.value - (record.tokensAtStart[$1.key] ?? 0)) }
        // docs/high-availability.md, "Duplicates at a change of hands": per change of hands, per
        // lane of the stream (one lane, tracking, carries hits here), at most --max-unsynced. The
        // primary's death stops every stream's lanes once (no lease can be renewed), whoever
        // holds the lease afterwards. The requests in flight alone (the first design) are printed.
        let changes = handovers + HighAvailabilityFleet.relayCount
        let bound = changes * HighAvailabilityFleet.maxUnsynced
        #expect(
            duplicates <= bound,
            "\(duplicates) duplicate hits exceed the documented bound \(bound) (\(handovers) changes of hands + the failover's \(HighAvailabilityFleet.relayCount) streams, × --max-unsynced \(HighAvailabilityFleet.maxUnsynced))"
        )
        let scores = fleet.load.scores.map { $0.withLockedValue { $0 } }
        #expect(scores.allSatisfy { $0.unexpected.isEmpty }, "answers other than 200 and 503: \(scores.map { $0.unexpected.prefix(5) })")
        #expect(scores.allSatisfy { $0.unavailableWithoutRetryAfter == 0 }, "every 503 carries Retry-After")
        for note in record.notes { print("high availability: \(note)") }
        print(
            "high availability: duplicates in all after each step: \(record.duplicatesAfter.map { "\($0.step) \($0.duplicates)" }.joined(separator: ", "))"
        )
        print(
            "high availability: \(acknowledged.count) hits acknowledged (\(attempted.count) sent, \(scores.map(\.unavailable).reduce(0, +)) answered 503, \(scores.map(\.transportFailures).reduce(0, +)) unanswered), \(received.count) reached Campaign (\(received.subtracting(acknowledged).count) logged but unacknowledged), \(duplicates) duplicates (\(sentByTwoRelays) sent by two relays; bound \(bound): \(changes) changes × --max-unsynced \(HighAvailabilityFleet.maxUnsynced); requests in flight alone \(changes * HighAvailabilityFleet.inFlight)); fleet counts exact"
        )
    }

    @Test(
        "edge on files → central relay on PostgreSQL, under load, 6 kill -9 alternating: every acknowledged event reaches Campaign, and the central counts each edge event once"
    )
    func chainWithCentralOnPostgres() async throws {
        let binary = try RelayBinary.path()
        let postgres = try await TestPostgres.start()
        let root = temporaryDirectory("high-availability-chain")
        let (edgeDirectory, centralDirectory) = ("\(root)/edge", "\(root)/central")
        let campaign = try await RunningEmulator.start()
        let http = TestHTTPClient()
        let load = RelayChainKillTests.Load()
        // Ports below the ephemeral range: a restart must get its port back while the other
        // relay keeps connecting to it (portsBelowEphemeralRange(_:)).
        let ports = RelayChainKillTests.Ports()
        let stable = try portsBelowEphemeralRange(2)
        ports.central.store(stable[0], ordering: .relaxed)
        ports.edge.store(stable[1], ordering: .relaxed)
        var children: [LoggedChild] = []
        defer { for child in children { child.killWithoutWaiting() } }
        func start(_ role: String, _ arguments: [String]) async throws -> LoggedChild {
            let port = role == "central" ? ports.central.load(ordering: .relaxed) : ports.edge.load(ordering: .relaxed)
            let child = try LoggedChild(
                binary, ["serve", "--bind", "127.0.0.1:\(port)", "--backoff-cap", "1"] + arguments, logPath: "\(root)/\(role)-\(children.count).log")
            children.append(child)
            let bound = Int(try await child.await(#"address=127\.0\.0\.1:(\d+)"#)) ?? 0
            if role == "central" { ports.central.store(bound, ordering: .relaxed) } else { ports.edge.store(bound, ordering: .relaxed) }
            return child
        }
        let central = { "http://127.0.0.1:\(ports.central.load(ordering: .relaxed))" }
        let edge: @Sendable () -> String = { "http://127.0.0.1:\(ports.edge.load(ordering: .relaxed))" }
        let centralArguments = [
            "--data-dir", centralDirectory, "--relay-token", RelayChainKillTests.token, "--log-postgres-url", postgres.url, "--relay-name", "central",
            "--lease-seconds", String(HighAvailabilityFleet.leaseSeconds), "--tracking-host", campaign.url, "--marketing-host", campaign.url,
            "--max-unsynced", "256",
        ]
        do {
            var centralRelay = try await start("central", centralArguments)
            let edgeArguments = ["--data-dir", edgeDirectory, "--upstream-relay", central(), "--upstream-token", RelayChainKillTests.token]
            var edgeRelay = try await start("edge", edgeArguments)
            let clients = Task {
                await withTaskGroup(of: Void.self) { group in
                    for client in 0..<4 { group.addTask { await RelayChainKillTests.client(client, edge: edge, load: load, http: http) } }
                }
            }
            defer { load.stopping.store(true, ordering: .relaxed) }
            for kill in 0..<6 {
                let before = load.acknowledgedCount
                try await eventually("500 more events acknowledged by the edge before kill \(kill)", seconds: 240) {
                    try HighAvailabilityFleet.ensureRunning([edgeRelay, centralRelay])
                    return load.acknowledgedCount >= before + 500
                }
                if kill % 2 == 0 {
                    await edgeRelay.kill9()
                    edgeRelay = try await start("edge", edgeArguments)
                } else {
                    await centralRelay.kill9()
                    centralRelay = try await start("central", centralArguments)
                }
            }
            load.stopping.store(true, ordering: .relaxed)
            await clients.value
            try await eventually("the edge to have handed everything on", seconds: 180) {
                try HighAvailabilityFleet.ensureRunning([edgeRelay, centralRelay])
                let body = try await http.get(edge() + "/readyz").body
                return body.contains(#""backlog":0"#) && body.contains(#""reachable":true"#)
            }
            await edgeRelay.stop()
            let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", edgeDirectory])
            try #require(dump.status == 0, "\(dump.stderr)")
            var logged: [Int: (delivery: String, action: String)] = [:]
            for event in try RelayChainKillTests.jsonLines(dump.stdout) {
                let id = try #require(RelayChainKillTests.number(event["messageId"] as? String ?? ""))
                logged[id] = (event["deliveryId"] as? String ?? "", event["action"] as? String ?? "")
            }
            var expected: [String: [String: Int]] = [:]
            for (delivery, action) in logged.values { expected[delivery, default: [:]][action, default: 0] += 1 }
            func received() async -> Set<Int> { Set(await campaign.emulator.recorder.hits.keys.compactMap { Int($0.messageId, radix: 16) }) }
            try await eventually("Campaign to receive every event of the edge's log (\(logged.count))", seconds: 240) {
                try HighAvailabilityFleet.ensureRunning([centralRelay])
                if await received().isSuperset(of: logged.keys) { return true }
                try await Task.sleep(for: .milliseconds(250))
                return false
            }
            var counted: [String: [String: Int]] = [:]
            try await waitUntil("the central's fleet counts to equal the edge's log", seconds: 180) {
                counted = try await FleetPostgresTests.fleetCounts(binary, postgres.url).0.totals
                if counted == expected { return true }
                try await Task.sleep(for: .seconds(1))
                return false
            }
            #expect(
                counted == expected, "stats --postgres-url: the central's counts against the edge's log (a duplicate at the central counts twice)")
            let acknowledged = Set(load.state.withLockedValue { $0.acknowledged.keys })
            let campaignGot = await received()
            #expect(
                acknowledged.isSubset(of: Set(logged.keys)),
                "\(acknowledged.subtracting(logged.keys).count) acknowledged events not in the edge's log")
            #expect(campaignGot == Set(logged.keys), "Campaign got \(campaignGot.count) distinct events, the edge logged \(logged.count)")
            let duplicates = await campaign.emulator.recorder.acceptedHits - campaignGot.count
            // Three central kills, each a crash of the stream's owner: at most --max-unsynced per
            // lane each (docs/high-availability.md); the requests in flight alone (--concurrency,
            // 8) are printed beside it.
            #expect(duplicates <= 3 * 256, "\(duplicates) hits Campaign got twice after 3 central kills (bound 3 × --max-unsynced 256)")
            print(
                "high availability chain: 6 kills, \(acknowledged.count) events acknowledged, \(logged.count) in the edge's log, counted once each at the central (PostgreSQL log), \(duplicates) hits Campaign got twice (bound 3 kills × --max-unsynced 256 = 768; requests in flight alone 3 × 8 = 24); logs in \(root)"
            )
            await centralRelay.stop()
        } catch {
            Issue.record("stopped at \(error); logs in \(root): \(children.suffix(2).map { $0.text.suffix(1500) })")
        }
        await http.shutdown()
        await campaign.stop()
        await postgres.destroy()
        removeTree(edgeDirectory)
        removeTree(centralDirectory)
    }
}

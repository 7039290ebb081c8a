import Foundation
import NIOConcurrencyHelpers
import RelayProcessTestSupport
import RelayTestSupport
import Synchronization
import Testing

/// Three `serve` processes on one replicated PostgreSQL log, each forwarding to a Campaign
/// emulator of its own, and the SDK load spread over them: the harness of
/// `HighAvailabilityTests`. One emulator per relay is how the test tells which relay sent a hit
/// (Campaign does not say); together they are "Campaign".
final class HighAvailabilityFleet: Sendable {
    static let relayCount = 3
    static let leaseSeconds = 3
    /// `--concurrency`: requests in flight to a host, per lane; an SDK hit is one request.
    static let inFlight = 4
    /// `--max-unsynced`: what a lane reads past its saved cursor, the documented bound on what a
    /// change of hands sends twice (docs/high-availability.md, "Duplicates at a change of hands");
    /// small, so that the bound means something. A pipelined batch of hits is a quarter of it.
    static let maxUnsynced = 64
    /// What a lane may have under way at once and still send after losing its lease: its
    /// requests in flight and one pipelined batch of hits, sent whole.
    static var underWay: Int { inFlight + maxUnsynced / 4 }
    /// Concurrent clients per relay.
    static let clientsPerRelay = 2

    let binary: String
    let root: String
    let url: String
    let emulators: [RunningEmulator]
    let children = NIOLockedValueBox<[LoggedChild?]>(Array(repeating: nil, count: relayCount))
    let ports = NIOLockedValueBox<[Int]>(Array(repeating: 0, count: relayCount))
    let load = HitLoad()

    init(binary: String, root: String, url: String, emulators: [RunningEmulator]) {
        self.binary = binary
        self.root = root
        self.url = url
        self.emulators = emulators
    }

    static func name(_ relay: Int) -> String { "r\(relay + 1)" }
    func dataDirectory(_ relay: Int) -> String { "\(root)/\(Self.name(relay))" }
    func relayURL(_ relay: Int) -> String { "http://127.0.0.1:\(ports.withLockedValue { $0[relay] })" }
    func child(_ relay: Int) -> LoggedChild? { children.withLockedValue { $0[relay] } }

    /// Starts relay `relay`; its output goes to `root/rN.log`, beside its data directory.
    func start(_ relay: Int) async throws {
        let campaign = emulators[relay].url
        let child = try LoggedChild(
            binary,
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", dataDirectory(relay), "--log-postgres-url", url, "--relay-name", Self.name(relay),
                "--lease-seconds", String(Self.leaseSeconds), "--tracking-host", campaign, "--marketing-host", campaign, "--concurrency",
                String(Self.inFlight), "--max-unsynced", String(Self.maxUnsynced), "--backoff-cap", "1",
            ], logPath: "\(root)/\(Self.name(relay)).log")
        children.withLockedValue { $0[relay] = child }
        let port = try await child.await(#"address=127\.0\.0\.1:(\d+)"#)
        ports.withLockedValue { $0[relay] = Int(port) ?? 0 }
    }

    /// Every relay still running killed (SIGKILL): for the test's `defer`.
    func killAll() {
        for child in children.withLockedValue({ $0 }) { child?.killWithoutWaiting() }
    }

    /// The last lines of every relay's log, and how it ended, for a failure message.
    func logs() -> String {
        (0..<Self.relayCount).map { relay in
            let process = child(relay)?.process
            let state = process.map { $0.isRunning ? "running" : "ended (\($0.terminationReason) \($0.terminationStatus))" } ?? "not started"
            return "\(Self.name(relay)), \(state), \(root)/\(Self.name(relay)).log: \(child(relay)?.text.suffix(1500) ?? "")"
        }.joined(separator: "\n")
    }

    /// A relay that ended by itself (a crash): waiting on would only run out the time.
    struct RelayEnded: Error, CustomStringConvertible {
        var description: String
    }

    /// A crash's message and the start of its backtrace (the crashed thread's frames follow the
    /// other threads', so the log's tail alone may miss the cause).
    static func crash(in log: String) -> String {
        guard let start = log.range(of: "*** Program crashed") ?? log.range(of: "Fatal error") else { return String(log.suffix(3000)) }
        let before = log[..<start.lowerBound].split(separator: "\n").suffix(3).joined(separator: "\n")
        let crashed = log.range(of: "crashed:\n", range: start.upperBound..<log.endIndex).map { String(log[$0.upperBound...].prefix(2500)) } ?? ""
        return before + "\n" + String(log[start.lowerBound...].prefix(300)) + "\n…\n" + crashed
    }

    /// Throws ``RelayEnded`` when one of `relays` has ended (a crash: waiting on would only run
    /// out the time).
    static func ensureRunning(_ relays: [LoggedChild]) throws {
        for relay in relays where !relay.process.isRunning {
            throw RelayEnded(description: "\(relay.logPath) ended by itself: \(crash(in: relay.text))")
        }
    }

    /// Throws ``RelayEnded`` when a relay the test has not killed has ended.
    func ensureRunning() throws {
        for relay in 0..<Self.relayCount where !load.isGone(relay) {
            guard let process = child(relay)?.process, !process.isRunning else { continue }
            throw RelayEnded(
                description:
                    "\(Self.name(relay)) ended by itself (\(process.terminationReason) \(process.terminationStatus)): \(Self.crash(in: child(relay)?.text ?? ""))"
            )
        }
    }

    /// Runs the load until ``HitLoad/stopping``: ``clientsPerRelay`` clients per relay, each
    /// sending only to its relay (a frozen relay holds up its own clients, not the others').
    func runLoad(_ http: TestHTTPClient) async {
        await withTaskGroup(of: Void.self) { group in
            for relay in 0..<Self.relayCount {
                for client in 0..<Self.clientsPerRelay {
                    group.addTask { await self.client(relay: relay, client: client, http: http) }
                }
            }
        }
    }

    /// One client: SDK open/impression hits (`GET /r/?id=hHEX,dR,TAG`), each id sent once; a
    /// hit is acknowledged only by a 200.
    func client(relay: Int, client: Int, http: TestHTTPClient) async {
        var next = (relay * Self.clientsPerRelay + client + 1) * HitLoad.idsPerClient
        while !load.stopping.load(ordering: .relaxed), !load.isGone(relay) {
            let id = next
            next += 1
            load.scores[relay].withLockedValue { _ = $0.attempted.insert(id) }
            let answer = try? await http.get(relayURL(relay) + "/r/?id=h\(String(id, radix: 16)),\(HitLoad.delivery(id)),\(HitLoad.tag(id))")
            load.scores[relay].withLockedValue { score in
                switch answer?.status {
                case 200?: score.acknowledged.insert(id)
                case 503?:
                    score.unavailable += 1
                    if answer?.headers.first(name: "Retry-After") == nil { score.unavailableWithoutRetryAfter += 1 }
                case let status?: score.unexpected.append("\(status) \(answer?.body.prefix(200) ?? "")")
                case nil: score.transportFailures += 1
                }
            }
            // A real SDK waits after a refusal; shorter than Retry-After, to keep the test short.
            if answer?.status != 200 { try? await Task.sleep(for: .milliseconds(50)) }
        }
    }

    /// What each emulator received: hit id → how many times.
    func receipts() async -> [[Int: Int]] {
        var all: [[Int: Int]] = []
        for emulator in emulators {
            var received: [Int: Int] = [:]
            for (hit, count) in await emulator.emulator.recorder.hits {
                if let id = Int(hit.messageId, radix: 16) { received[id, default: 0] += count }
            }
            all.append(received)
        }
        return all
    }

    /// The ids Campaign (any emulator) received.
    func received() async -> Set<Int> { Set(await receipts().flatMap(\.keys)) }

    /// Waits until Campaign has every id of `ids`, checking every 250 ms (a full copy of the
    /// receipts is not free).
    func waitForCampaign(_ what: String, _ ids: Set<Int>, seconds: Double = 180) async throws {
        do {
            try await eventually("Campaign to receive \(what) (\(ids.count) hits)", seconds: seconds) {
                try self.ensureRunning()
                let missing = ids.subtracting(await self.received())
                if missing.isEmpty { return true }
                try await Task.sleep(for: .milliseconds(250))
                return false
            }
        } catch {
            let missing = ids.subtracting(await received())
            let byStream = Dictionary(grouping: missing, by: HitLoad.relay).mapValues(\.count)
            Issue.record("missing in Campaign: \(missing.count) hits; by the relay that acknowledged them: \(byStream.sorted { $0.key < $1.key })")
            throw error
        }
    }

    /// `stream → (holder, token)` of `relay_log_leases`, read on `server`.
    static func leases(_ server: TestPostgres) async throws -> [String: (holder: String, token: Int)] {
        var leases: [String: (holder: String, token: Int)] = [:]
        for line in try await server.psql("SELECT stream || '|' || holder || '|' || token FROM relay_log_leases").split(separator: "\n") {
            let fields = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 3 else { continue }
            leases[fields[0]] = (fields[1], Int(fields[2]) ?? 0)
        }
        return leases
    }

    /// The log's tables as the writable server has them (leases, heartbeats, cursors, frames; times relative
    /// to the database's now), for a failure message: whether a stalled stream is unleased, its
    /// owner's heartbeat stale, or its cursor short of what was stored.
    static func databaseState(_ cluster: ReplicatedTestPostgres) async -> String {
        // The promoted standby once there was a failover; otherwise the primary.
        let promoted = (try? await cluster.standby.psql("SELECT pg_is_in_recovery()")) == "f"
        let server = promoted ? cluster.standby : cluster.primary
        let queries = [
            "leases":
                "SELECT string_agg(stream || ' ' || holder || ' token ' || token || ' expires ' || round(extract(epoch FROM expires_at - now())::numeric, 1) || 's', '; ' ORDER BY stream) FROM relay_log_leases",
            "heartbeats":
                "SELECT string_agg(stream || ' alive ' || coalesce(round(extract(epoch FROM alive_until - now())::numeric, 1)::text, 'never') || 's', '; ' ORDER BY stream) FROM relay_log_streams",
            "cursors": "SELECT string_agg(stream || '/' || consumer || ' ' || position, '; ' ORDER BY stream, consumer) FROM relay_log_cursors",
            "frames":
                "SELECT string_agg(stream || ' ' || n || ' frames to ' || last, '; ' ORDER BY stream) FROM (SELECT stream, count(*) AS n, max(first_sequence + event_count) AS last FROM relay_log_frames GROUP BY stream) f",
        ]
        var state: [String] = []
        for (name, sql) in queries.sorted(by: { $0.key < $1.key }) {
            state.append("\(name): " + ((try? await server.psql(sql)) ?? "(no answer)"))
        }
        return "database on port \(server.port): " + state.joined(separator: " | ")
    }

    /// The `"log"` object of a relay's `/v1/status`.
    func logStatus(_ relay: Int, _ http: TestHTTPClient) async throws -> [String: Any] {
        let body = try await http.get(relayURL(relay) + "/v1/status").body
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return object?["log"] as? [String: Any] ?? [:]
    }
}

/// The SDK load on the fleet, per relay: what was sent, what was acknowledged (200), and every
/// other answer.
final class HitLoad: Sendable {
    static let idsPerClient = 10_000_000

    struct Score {
        var attempted = Set<Int>()
        var acknowledged = Set<Int>()
        var unavailable = 0
        var unavailableWithoutRetryAfter = 0
        /// Status and body of every answer other than 200 and 503.
        var unexpected: [String] = []
        /// Requests that got no answer (a relay killed under them).
        var transportFailures = 0
    }

    let scores = (0..<HighAvailabilityFleet.relayCount).map { _ in NIOLockedValueBox(Score()) }
    let stopping = Atomic<Bool>(false)
    private let gone = NIOLockedValueBox<Set<Int>>([])

    /// Stops the clients of `relay` (it died for good).
    func markGone(_ relay: Int) { gone.withLockedValue { _ = $0.insert(relay) } }
    func isGone(_ relay: Int) -> Bool { gone.withLockedValue { $0.contains(relay) } }

    func acknowledged(_ relay: Int) -> Set<Int> { scores[relay].withLockedValue { $0.acknowledged } }
    var acknowledged: Set<Int> { scores.reduce(into: Set<Int>()) { $0.formUnion($1.withLockedValue { $0.acknowledged }) } }
    var attempted: Set<Int> { scores.reduce(into: Set<Int>()) { $0.formUnion($1.withLockedValue { $0.attempted }) } }
    func unavailable(_ relay: Int) -> Int { scores[relay].withLockedValue { $0.unavailable } }

    /// The relay whose clients send `id`.
    static func relay(_ id: Int) -> Int { (id / idsPerClient - 1) / HighAvailabilityFleet.clientsPerRelay }
    /// Each relay's clients write a delivery of their own, so the fleet counts show each stream.
    static func delivery(_ id: Int) -> String { "d\(relay(id))" }
    /// 1 (impression) or 2 (open), alternating.
    static func tag(_ id: Int) -> Int { 1 + id % 2 }
    static func action(_ id: Int) -> String { tag(id) == 1 ? "impression" : "open" }

    /// delivery → action → hits, of `ids`: what the fleet tables must count.
    static func counts(_ ids: Set<Int>) -> [String: [String: Int]] {
        var counts: [String: [String: Int]] = [:]
        for id in ids { counts[delivery(id), default: [:]][action(id), default: 0] += 1 }
        return counts
    }
}

extension HighAvailabilityTests {
    /// What the runs measured, for the final checks and the printed summary.
    struct Record {
        var tokensAtStart: [String: Int] = [:]
        /// Hits the frozen relay sent after waking that the adopter had sent already.
        var resentAfterWaking = 0
        var notes: [String] = []
        /// Hits Campaign got more than once, in all, after each step.
        var duplicatesAfter: [(step: String, duplicates: Int)] = []

        /// Notes how many hits Campaign got more than once so far (a step's share is the rise).
        mutating func countDuplicates(_ fleet: HighAvailabilityFleet, _ step: String) async {
            let total = await fleet.receipts().reduce(into: [Int: Int]()) { all, emulator in all.merge(emulator, uniquingKeysWith: +) }
            duplicatesAfter.append((step, total.values.reduce(0) { $0 + $1 - 1 }))
        }
    }
}

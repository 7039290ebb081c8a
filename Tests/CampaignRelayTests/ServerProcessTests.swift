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

/// The real `campaign-relay serve` process under load, killed with SIGKILL again and again (its
/// graceful stop is ``ServerShutdownTests``).
@Suite("A real server process under load", .serialized, .timeLimit(.minutes(10)), .tier(.thorough), .seedInFailures)
struct ServerProcessTests {
    /// A started `serve` child and the port it listens on.
    struct ServeProcess {
        var child: ChildProcess
        var port: Int
        var process: SpawnedProcess { child.process }
        var url: String { "http://127.0.0.1:\(port)" }

        /// Starts `serve` and waits (at most 30 s) for its "listening" line.
        static func start(_ binary: String, directory: String, extra: [String] = []) async throws -> ServeProcess {
            let child = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-level", "notice"] + extra)
            let port = try await child.await(#"address=127\.0\.0\.1:(\d+)"#)
            return ServeProcess(child: child, port: Int(port) ?? 0)
        }
    }

    /// Clients posting 20-event batches with unique message ids; remembers the ids of answered (200) batches.
    final class Load: Sendable {
        let acknowledged = NIOLockedValueBox<Set<Int>>([])
        let nextId = Atomic<Int>(1)
        /// Set just before the server is signalled or killed: from then on refusals are expected.
        let serverStopping = Atomic<Bool>(false)
        /// Transport errors while the server was meant to be up: each one is a test failure.
        let unexpectedErrors = NIOLockedValueBox<[String]>([])
        /// 503 answers after the signal, and whether each had Retry-After.
        let refusedAfterSignal = NIOLockedValueBox<[Bool]>([])

        func run(_ url: String, http: TestHTTPClient, clients: Int, until stop: @escaping @Sendable () -> Bool) async {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<clients {
                    group.addTask {
                        while !stop() {
                            let first = self.nextId.add(20, ordering: .relaxed).oldValue
                            let ids = Array(first..<(first + 20))
                            let body = ids.map { #"{"kind":"track","action":"impression","messageId":"\#($0)","deliveryId":"load"}"# }.joined(
                                separator: "\n")
                            let answer: TestHTTPClient.Answer
                            do {
                                answer = try await http.post(url + "/v1/events", body)
                            } catch {
                                if !self.serverStopping.load(ordering: .relaxed) { self.unexpectedErrors.withLockedValue { $0.append("\(error)") } }
                                return
                            }
                            if answer.status == 200 {
                                self.acknowledged.withLockedValue { $0.formUnion(ids) }
                            } else if answer.status == 503 {
                                let retryAfter = answer.headers.first(name: "Retry-After") != nil
                                if self.serverStopping.load(ordering: .relaxed) { self.refusedAfterSignal.withLockedValue { $0.append(retryAfter) } }
                            } else {
                                self.unexpectedErrors.withLockedValue { $0.append("HTTP \(answer.status): \(answer.body)") }
                                return
                            }
                        }
                    }
                }
            }
        }
    }

    /// Ids of the events of `delivery` in the log (each must appear once).
    static func loggedIds(_ binary: String, _ directory: String, delivery: String = "load") async throws -> [Int] {
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", directory])
        return dump.stdout.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object["deliveryId"] as? String == delivery
            else { return nil }
            return Int(object["messageId"] as? String ?? "")
        }
    }

    @Test("kill -9 while clients post: every 200 is in the log, counted once and forwarded (20 cycles or more)")
    func killCycles() async throws {
        let binary = try RelayBinary.path()
        let emulator = try await RunningEmulator.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("servekill-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let http = TestHTTPClient()
        let load = Load()
        var generator = SeededGenerator(seed: TestSeed.make(for: "serve kill -9 cycles"))
        // 20 cycles, and more (60 at most) until over 1,000 events were acknowledged: the kills come
        // after random pauses, and on a loaded CI machine 20 of them once left only 540.
        var cycles = 0
        while cycles < 20 || (cycles < 60 && load.acknowledged.withLockedValue { $0.count } <= 1000) {
            cycles += 1
            let server = try await ServeProcess.start(binary, directory: directory, extra: ["--tracking-host", emulator.url])
            let killed = Atomic<Bool>(false)
            load.serverStopping.store(false, ordering: .relaxed)
            async let traffic: Void = load.run(server.url, http: http, clients: 4) { killed.load(ordering: .relaxed) }
            // The kill lands at a random moment of the load: after 1 to 3 more acknowledged batches
            // (a busy machine may take seconds to its first), then a random pause of up to 250 ms.
            let target = load.acknowledged.withLockedValue { $0.count } + 20 * Int(1 + generator.next() % 3)
            let deadline = ContinuousClock.now + .seconds(60)
            while load.acknowledged.withLockedValue({ $0.count }) < target, ContinuousClock.now < deadline, server.process.isRunning {
                try await Task.sleep(for: .milliseconds(5))
            }
            try await Task.sleep(for: .milliseconds(Int(generator.next() % 250)))
            load.serverStopping.store(true, ordering: .relaxed)
            kill(server.process.processIdentifier, SIGKILL)
            killed.store(true, ordering: .relaxed)
            await server.child.exit(within: 30)
            await traffic
        }
        // A last start: let it forward and count everything, then stop it gently.
        let server = try await ServeProcess.start(binary, directory: directory, extra: ["--tracking-host", emulator.url])
        let acknowledged = load.acknowledged.withLockedValue { $0 }
        #expect(acknowledged.count > 1000, "the load must have been acknowledged many times, got \(acknowledged.count)")
        #expect(
            load.unexpectedErrors.withLockedValue { $0 }.isEmpty,
            "requests failed while the server was up: \(load.unexpectedErrors.withLockedValue { $0 }.prefix(3))")
        var counted = 0
        // Forwarding runs at background priority: beside a burner it may take minutes; the wait
        // lasts as long as the counts move.
        _ = try await waitWhileProgressing("the restarted server to count and forward every logged event") {
            let answer = try? await http.get(server.url + "/v1/deliveries/load")
            let object = answer.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body.utf8)) as? [String: Any] }
            counted = object?["impressions"] as? Int ?? 0
            let forwarded = await emulator.emulator.recorder.distinctHits
            let durable = try await http.nextSequence(server.url)
            return (counted == durable - 1 && forwarded >= counted, counted + forwarded)
        }
        kill(server.process.processIdentifier, SIGTERM)
        await server.child.exit(within: 30)
        #expect(server.process.terminationStatus == 0)

        let logged = try await Self.loggedIds(binary, directory)
        #expect(Set(logged).count == logged.count, "an event is in the log twice")
        #expect(acknowledged.isSubset(of: Set(logged)), "\(acknowledged.subtracting(logged).count) acknowledged events are missing from the log")
        #expect(counted == logged.count, "aggregated \(counted), logged \(logged.count): each event must be counted exactly once")
        let forwardedIds = Set(await emulator.emulator.recorder.hits.keys.map { Int($0.messageId, radix: 16) ?? -1 })
        #expect(acknowledged.isSubset(of: forwardedIds), "\(acknowledged.subtracting(forwardedIds).count) acknowledged events were not forwarded")
        await http.shutdown()
        await emulator.stop()
    }

    /// Keyed batches of a load run: what was sent, and the answer when one came.
    final class KeyedRequests: Sendable {
        struct Request: Sendable {
            var key: String
            var body: String
            var ids: [Int]
            var answer: String?
        }
        let requests = NIOLockedValueBox<[Request]>([])
        let nextId = Atomic<Int>(1)

        /// How many batches have their answer.
        var answeredCount: Int { requests.withLockedValue { $0.lazy.filter { $0.answer != nil }.count } }

        /// Posts 10-event batches, each with a fresh Idempotency-Key, until the server stops answering.
        func run(_ url: String, http: TestHTTPClient, clients: Int, cycle: Int) async {
            await withTaskGroup(of: Void.self) { group in
                for client in 0..<clients {
                    group.addTask {
                        for number in 0... {
                            let first = self.nextId.add(10, ordering: .relaxed).oldValue
                            let ids = Array(first..<(first + 10))
                            let body = ids.map { #"{"kind":"track","action":"impression","messageId":"\#($0)","deliveryId":"keyed"}"# }
                                .joined(separator: "\n")
                            let key = "cycle\(cycle)-client\(client)-\(number)"
                            let index = self.requests.withLockedValue {
                                $0.append(Request(key: key, body: body, ids: ids))
                                return $0.count - 1
                            }
                            guard let answer = try? await http.post(url + "/v1/events", body, headers: [("Idempotency-Key", key)]),
                                answer.status == 200
                            else { return }
                            self.requests.withLockedValue { $0[index].answer = answer.body }
                        }
                    }
                }
            }
        }
    }

    @Test(
        "Idempotency-Key across kill -9 of the real process: every keyed batch retried after the restart is stored exactly once, and answered as the first time"
    )
    func idempotencyAcrossRestarts() async throws {
        let binary = try RelayBinary.path()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("idemkill-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let http = TestHTTPClient()
        let load = KeyedRequests()
        var generator = SeededGenerator(seed: TestSeed.make(for: "idempotency kill -9 cycles"))
        var unansweredRetried = 0
        var storedButUnanswered = 0
        for cycle in 0..<10 {
            let server = try await ServeProcess.start(binary, directory: directory, extra: ["--no-aggregates"])
            // Retry, with its key and body, every batch the previous process never answered, and
            // a few it did: the answers must be 200, and equal to the first answer when there was one.
            for (index, request) in load.requests.withLockedValue({ Array($0.enumerated()) }) where request.answer == nil || index % 7 == 0 {
                let retried = try await http.post(server.url + "/v1/events", request.body, headers: [("Idempotency-Key", request.key)])
                #expect(retried.status == 200, "retry of \(request.key): \(retried)")
                if let first = request.answer {
                    #expect(retried.body == first, "retry of \(request.key) answered \(retried.body), first \(first)")
                } else {
                    unansweredRetried += 1
                    // Stored before the kill, answered only now: the crash window the key is for.
                    if retried.headers.first(name: "Idempotent-Replayed") == "true" { storedButUnanswered += 1 }
                    load.requests.withLockedValue { $0[index].answer = retried.body }
                }
            }
            let answeredBefore = load.answeredCount
            async let traffic: Void = load.run(server.url, http: http, clients: 4, cycle: cycle)
            // Kill once this process has answered some of the load (a busy machine answers slowly,
            // so a fixed sleep alone could kill it before its first answer), at a random moment after.
            try await waitUntil("cycle \(cycle): 12 keyed batches answered", seconds: 90) { load.answeredCount >= answeredBefore + 12 }
            try await Task.sleep(for: .milliseconds(Int(generator.next() % 250)))
            kill(server.process.processIdentifier, SIGKILL)
            await server.child.exit(within: 30)
            await traffic
        }
        await http.shutdown()
        print("idempotency kill test: \(unansweredRetried) unanswered batches retried, \(storedButUnanswered) of them already stored")

        let requests = load.requests.withLockedValue { $0 }
        let logged = try await Self.loggedIds(binary, directory, delivery: "keyed")
        #expect(Set(logged).count == logged.count, "\(logged.count - Set(logged).count) events stored twice")
        let answered = requests.filter { $0.answer != nil }
        #expect(answered.count > 100, "the load was answered \(answered.count) times")
        #expect(unansweredRetried >= 1, "at least one batch lost its answer to a kill and was retried")
        let missing = Set(answered.flatMap(\.ids)).subtracting(logged)
        #expect(missing.isEmpty, "\(missing.count) events of answered batches are not in the log")
    }
}

/// The real `campaign-relay serve` process under load, stopped with SIGTERM.
@Suite("A real server process stopped under load", .timeLimit(.minutes(10)), .tier(.fast))
struct ServerShutdownTests {
    @Test(
        "SIGTERM under load: new events refused with 503 during --shutdown-delay, then the listener closes, positions are saved in order, nothing acknowledged is lost, exit 0"
    )
    func gracefulShutdown() async throws {
        let binary = try RelayBinary.path()
        let emulator = try await RunningEmulator.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("serveterm-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Long enough for the checks below to run inside it on a loaded machine (a CI run beside
        // a CPU burner found the listener closed after a delay of 1.5 s).
        let delay = 8.0
        // After the delay, the uploader's lanes finish what is on the wire and save their
        // positions. They run at background priority: beside a CPU burner and the fast tier they
        // once took more than the default 10 s, and the group then cancelled the rest out of
        // order. The order is what this test checks, so the timeout gives them room.
        let timeout = 60.0
        let server = try await ServerProcessTests.ServeProcess.start(
            binary, directory: directory,
            extra: ["--tracking-host", emulator.url, "--shutdown-delay", "\(delay)", "--shutdown-timeout", "\(timeout)"])
        let http = TestHTTPClient()
        let load = ServerProcessTests.Load()
        let stopped = Atomic<Bool>(false)
        async let traffic: Void = load.run(server.url, http: http, clients: 6) { stopped.load(ordering: .relaxed) }
        try await waitUntil("200 events acknowledged under load", seconds: 60) { load.acknowledged.withLockedValue { $0.count } > 200 }
        let signalled = Date()
        load.serverStopping.store(true, ordering: .relaxed)
        kill(server.process.processIdentifier, SIGTERM)

        // Once the server says it stopped taking events, new requests on new connections are
        // refused with 503 and Retry-After, and /readyz says why, while the listener stays open.
        _ = try await server.child.await("(shutting down): refusing new events")
        let fresh = TestHTTPClient()
        let refusedBatch = try await fresh.post(
            server.url + "/v1/events", #"[{"kind":"track","action":"open","messageId":"255","deliveryId":"late"}]"#,
            headers: [("Content-Type", "application/json")])
        #expect(refusedBatch.status == 503 && refusedBatch.headers.first(name: "Retry-After") != nil, "\(refusedBatch)")
        #expect(refusedBatch.headers.first(name: "Connection") == "close", "\(refusedBatch)")
        let refusedHit = try await fresh.get(server.url + "/r/?id=h1ff,late,1")
        #expect(refusedHit.status == 503 && refusedHit.headers.first(name: "Retry-After") != nil, "\(refusedHit)")
        #expect(refusedHit.headers.first(name: "Connection") == "close", "\(refusedHit)")
        let readiness = try await fresh.get(server.url + "/readyz")
        #expect(readiness.status == 503 && readiness.body.contains(#""reason":"shutting down""#), "\(readiness)")
        await fresh.shutdown()

        let exited = await server.child.exit(within: delay + timeout + 10)
        let took = Date().timeIntervalSince(signalled)
        stopped.store(true, ordering: .relaxed)
        await traffic
        #expect(exited && server.process.terminationStatus == 0)
        #expect(took >= delay && took < delay + timeout, "shutdown took \(took) s with a \(delay) s delay")
        #expect(
            load.unexpectedErrors.withLockedValue { $0 }.isEmpty,
            "requests failed before the signal: \(load.unexpectedErrors.withLockedValue { $0 }.prefix(3))")
        // The clients kept posting through the delay: they were refused, every time with Retry-After.
        let refusals = load.refusedAfterSignal.withLockedValue { $0 }
        #expect(refusals.count >= 6, "the load met \(refusals.count) refusals during a \(delay) s delay")
        #expect(refusals.allSatisfy { $0 }, "every 503 carries Retry-After")
        // After the exit the port is closed.
        let afterExit = TestHTTPClient()
        await #expect(throws: (any Error).self) { _ = try await afterExit.get(server.url + "/healthz") }
        await afterExit.shutdown()

        // The shutdown order: refuse, wait the delay, close the listener, stop the uploader and the
        // aggregator (each saving its position), close the log.
        let output = server.child.text
        let steps = [
            "shutting down: refusing new events", "shutdown delay over: closing the listener", "uploader stopped; positions saved",
            "aggregator stopped; counts saved", "campaign-relay stopped",
        ]
        let offsets = steps.map { output.range(of: $0)?.lowerBound }
        #expect(offsets.allSatisfy { $0 != nil }, "every step of the shutdown is logged: \(output.suffix(2000))")
        let found = offsets.compactMap { $0 }
        #expect(found == found.sorted(), "the steps come in the order \(steps)")
        let uploaderPosition = try #require(Int(try await server.child.await(#"tracking-position=(\d+)"#)))
        let aggregatorPosition = try #require(Int(try await server.child.await(#"next-sequence=(\d+)"#)))

        let acknowledged = load.acknowledged.withLockedValue { $0 }
        let logged = try await ServerProcessTests.loggedIds(binary, directory)
        #expect(acknowledged.isSubset(of: Set(logged)), "\(acknowledged.subtracting(logged).count) acknowledged events lost")
        #expect(Set(logged).count == logged.count)
        let verify = try await RelayBinary.run(binary, ["wal", "verify", "--data-dir", directory, "--json"])
        #expect(verify.status == 0 && verify.stdout.contains("\"clean\":true"), "a graceful stop leaves a clean log: \(verify.stdout)")

        // Positions saved: the aggregates cover a prefix of the log exactly, and the uploader's
        // cursor was kept (a later upload sends only what the server had not).
        let stats = try await RelayBinary.run(binary, ["stats", "--no-catch-up", "--data-dir", directory, "--json"])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any], "\(stats.stdout) \(stats.stderr)")
        let next = (object["sequences"] as? [String: Any])?["next"] as? Int ?? 0
        let impressions = (object["deliveries"] as? [[String: Any]])?.first?["impressions"] as? Int ?? 0
        #expect(next > 1, "the aggregator saved its position")
        #expect(next == aggregatorPosition, "the position the aggregator logged is the one it saved")
        #expect(impressions == next - 1, "the saved counts are exactly those of sequences 1..<\(next)")
        let forwardedBefore = await emulator.emulator.recorder.acceptedHits
        #expect(forwardedBefore > 0, "the uploader forwarded while the server ran")
        let upload = try await RelayBinary.run(
            binary, ["upload", "--until-drained", "--tracking-host", emulator.url, "--data-dir", directory, "--json"])
        #expect(upload.status == 0, "\(upload.stderr)")
        let resent = try #require(try JSONSerialization.jsonObject(with: Data(upload.stdout.utf8)) as? [String: Any])["delivered"] as? Int ?? -1
        #expect(
            resent == logged.count - (uploaderPosition - 1), "a later upload sends exactly the events from the saved position \(uploaderPosition) on")
        #expect(await emulator.emulator.recorder.distinctHits == logged.count, "every logged event forwarded")
        #expect(await emulator.emulator.recorder.acceptedHits - logged.count <= 4096, "duplicates within the bound")
        await http.shutdown()
        await emulator.stop()
    }
}

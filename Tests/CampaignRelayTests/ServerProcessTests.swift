#if canImport(Glibc)
import Glibc
#endif
import Foundation
import RelayTestSupport
import Synchronization
import Testing

/// The real `campaign-relay serve` process under load: killed with SIGKILL, or stopped with SIGTERM.
@Suite("A real server process under load", .serialized)
struct ServerProcessTests {
    /// A started `serve` child and the port it listens on.
    struct ServeProcess {
        var process: Process
        var port: Int
        var url: String { "http://127.0.0.1:\(port)" }

        static func start(_ binary: String, directory: String, extra: [String] = []) throws -> ServeProcess {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-level", "notice"] + extra
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // The server logs "campaign-relay listening address=127.0.0.1:PORT" once it accepts connections.
            var text = ""
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let chunk = errors.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
                if let range = text.range(of: #"address=127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                    let port = Int(text[range].split(separator: ":").last ?? "") ?? 0
                    // Keep draining stderr so the child never blocks on a full pipe.
                    let handle = errors.fileHandleForReading
                    Thread { while !handle.availableData.isEmpty {} }.start()
                    return ServeProcess(process: process, port: port)
                }
            }
            process.terminate()
            throw StartFailure(output: text)
        }

        struct StartFailure: Error { var output: String }
    }

    /// Clients posting 20-event batches with unique message ids; remembers the ids of answered (200) batches.
    final class Load: Sendable {
        let acknowledged = Mutex<Set<Int>>([])
        let nextId = Atomic<Int>(1)

        func run(_ url: String, http: TestHTTPClient, clients: Int, until stop: @escaping @Sendable () -> Bool) async {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<clients {
                    group.addTask {
                        while !stop() {
                            let first = self.nextId.add(20, ordering: .relaxed).oldValue
                            let ids = Array(first..<(first + 20))
                            let body = ids.map { #"{"kind":"track","action":"impression","messageId":"\#($0)","deliveryId":"load"}"# }.joined(separator: "\n")
                            guard let answer = try? await http.post(url + "/v1/events", body) else { return }
                            if answer.status == 200 { self.acknowledged.withLock { $0.formUnion(ids) } } else if answer.status != 503 { return }
                        }
                    }
                }
            }
        }
    }

    /// Ids of the `load` events in the log (each must appear once).
    func loggedIds(_ binary: String, _ directory: String) throws -> [Int] {
        let dump = try RelayBinary.run(binary, ["wal", "dump", "--data-dir", directory])
        return dump.stdout.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object["deliveryId"] as? String == "load" else { return nil }
            return Int(object["messageId"] as? String ?? "")
        }
    }

    @Test("kill -9 while clients post: every 200 is in the log, counted once and forwarded (20 cycles)")
    func killCycles() async throws {
        let binary = try RelayBinary.path()
        let emulator = try await RunningEmulator.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("servekill-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let http = TestHTTPClient()
        let load = Load()
        var generator = SeededGenerator(seed: TestSeed.make(for: "serve kill -9 cycles"))
        for _ in 0..<20 {
            let server = try ServeProcess.start(binary, directory: directory, extra: ["--tracking-host", emulator.url])
            let killed = Atomic<Bool>(false)
            async let traffic: Void = load.run(server.url, http: http, clients: 4) { killed.load(ordering: .relaxed) }
            try await Task.sleep(for: .milliseconds(Int(30 + generator.next() % 250)))
            kill(server.process.processIdentifier, SIGKILL)
            killed.store(true, ordering: .relaxed)
            server.process.waitUntilExit()
            await traffic
        }
        // A last start: let it forward and count everything, then stop it gently.
        let server = try ServeProcess.start(binary, directory: directory, extra: ["--tracking-host", emulator.url])
        let acknowledged = load.acknowledged.withLock { $0 }
        #expect(acknowledged.count > 1000, "the load must have been acknowledged many times, got \(acknowledged.count)")
        var counted = 0
        for _ in 0..<1500 {
            let answer = try? await http.get(server.url + "/v1/deliveries/load")
            let object = answer.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body.utf8)) as? [String: Any] }
            counted = object?["impressions"] as? Int ?? 0
            let forwarded = await emulator.emulator.recorder.distinctHits
            let durable = try await http.nextSequence(server.url)
            if counted == durable - 1, forwarded >= counted { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        kill(server.process.processIdentifier, SIGTERM)
        server.process.waitUntilExit()
        #expect(server.process.terminationStatus == 0)

        let logged = try loggedIds(binary, directory)
        #expect(Set(logged).count == logged.count, "an event is in the log twice")
        #expect(acknowledged.isSubset(of: Set(logged)), "\(acknowledged.subtracting(logged).count) acknowledged events are missing from the log")
        #expect(counted == logged.count, "aggregated \(counted), logged \(logged.count): each event must be counted exactly once")
        let forwardedIds = Set(await emulator.emulator.recorder.hits.keys.map { Int($0.messageId, radix: 16) ?? -1 })
        #expect(acknowledged.isSubset(of: forwardedIds), "\(acknowledged.subtracting(forwardedIds).count) acknowledged events were not forwarded")
        await http.shutdown()
        await emulator.stop()
    }

    @Test("SIGTERM under load: no acknowledged event lost, later requests refused, exit status 0")
    func gracefulShutdown() async throws {
        let binary = try RelayBinary.path()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("serveterm-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try ServeProcess.start(binary, directory: directory)
        let http = TestHTTPClient()
        let load = Load()
        let stopped = Atomic<Bool>(false)
        async let traffic: Void = load.run(server.url, http: http, clients: 6) { stopped.load(ordering: .relaxed) }
        try await Task.sleep(for: .milliseconds(400))
        let signalled = Date()
        kill(server.process.processIdentifier, SIGTERM)
        server.process.waitUntilExit()
        let took = Date().timeIntervalSince(signalled)
        stopped.store(true, ordering: .relaxed)
        await traffic
        #expect(server.process.terminationStatus == 0)
        #expect(took < 10, "shutdown took \(took) s")
        let acknowledged = load.acknowledged.withLock { $0 }
        #expect(acknowledged.count > 200)
        let logged = try loggedIds(binary, directory)
        #expect(acknowledged.isSubset(of: Set(logged)), "\(acknowledged.subtracting(logged).count) acknowledged events lost")
        #expect(Set(logged).count == logged.count)
        let verify = try RelayBinary.run(binary, ["wal", "verify", "--data-dir", directory, "--json"])
        #expect(verify.status == 0 && verify.stdout.contains("\"clean\":true"), "a graceful stop leaves a clean log: \(verify.stdout)")
        await http.shutdown()
    }
}

import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `serve --config` reloading its tenants on SIGHUP: added, changed and removed without a restart,
/// nothing lost or sent twice, a broken file leaving them as they were.
@Suite("Tenants: reloaded on SIGHUP", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct TenantReloadTests {
    static func config(defaultHost: String, tenants: [(name: String, host: String)], extra: String = "") -> String {
        var text = """
            tracking-host = "\(defaultHost)"
            marketing-host = "\(defaultHost)"
            backoff-base = 5
            backoff-cap = 0.05

            """
        for tenant in tenants {
            text += """

                [tenant.\(tenant.name)]
                tracking-host = "\(tenant.host)"
                marketing-host = "\(tenant.host)"

                """
        }
        return text + extra
    }

    /// Sends SIGHUP and waits for the `count`-th line saying how the reload went.
    static func reload(_ child: ChildProcess, expecting count: Int, of line: String) async throws {
        kill(child.process.processIdentifier, SIGHUP)
        let deadline = Date().addingTimeInterval(60)
        while child.text.components(separatedBy: line).count - 1 < count {
            guard Date() < deadline, child.process.isRunning else {
                Issue.record("no \(count)th '\(line)' after SIGHUP; serve printed: \(child.text.suffix(3000))")
                throw WaitedTooLong(what: line)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test("a tenant added, its host changed, then removed on SIGHUP; a broken file changes nothing; serve keeps running")
    func reloads() async throws {
        let binary = try RelayBinary.path()
        let (defaultHost, brandA, brandA2, brandB) = (
            try await RunningEmulator.start(), try await RunningEmulator.start(), try await RunningEmulator.start(), try await RunningEmulator.start()
        )
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tenant-reload-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/relay.toml"
        try Self.config(defaultHost: defaultHost.url, tenants: [("brand-a", brandA.url)]).write(toFile: path, atomically: true, encoding: .utf8)
        let child = try ChildProcess(
            binary, ["serve", "--config", path, "--bind", "127.0.0.1:0", "--data-dir", "\(directory)/data", "--log-level", "notice"])
        defer { child.stopWithoutWaiting() }
        let url = "http://127.0.0.1:\(try await child.await(#"address=127\.0\.0\.1:(\d+)"#))"
        let http = TestHTTPClient()
        let reloaded = "reloaded the tenants of --config"

        #expect(try await http.get(url + "/brand-a/r/?id=h1,d1,1").status == 200)
        #expect(try await http.get(url + "/brand-b/r/?id=h1,d1,1").status == 404)

        // Added: brand-b is taken and forwarded to its own host.
        try Self.config(defaultHost: defaultHost.url, tenants: [("brand-a", brandA.url), ("brand-b", brandB.url)])
            .write(toFile: path, atomically: true, encoding: .utf8)
        try await Self.reload(child, expecting: 1, of: reloaded)
        #expect(child.text.contains("added=brand-b"), "\(child.text.suffix(1000))")
        #expect(try await http.get(url + "/brand-b/r/?id=h2,d1,1").status == 200)
        try await eventually("brand-b's hit at its new host") { await brandB.emulator.recorder.acceptedHits == 1 }

        // Changed: brand-a's hits go to its new host from now on; none lost, none sent twice.
        for id in 2...30 { #expect(try await http.get(url + "/brand-a/r/?id=h\(String(id, radix: 16)),d1,1").status == 200) }
        try await eventually("brand-a's first 30 hits at its first host") { await brandA.emulator.recorder.distinctHits == 30 }
        try Self.config(defaultHost: defaultHost.url, tenants: [("brand-a", brandA2.url), ("brand-b", brandB.url)])
            .write(toFile: path, atomically: true, encoding: .utf8)
        try await Self.reload(child, expecting: 2, of: reloaded)
        #expect(child.text.contains("changed=brand-a"), "\(child.text.suffix(1000))")
        for id in 31...40 { #expect(try await http.get(url + "/brand-a/r/?id=h\(String(id, radix: 16)),d1,1").status == 200) }
        try await eventually("brand-a's next 10 hits at its new host") { await brandA2.emulator.recorder.distinctHits == 10 }
        #expect(await brandA.emulator.recorder.acceptedHits == 30, "the first host got the first 30 once each")
        #expect(Set(await brandA2.emulator.recorder.hits.keys.map(\.messageId)) == Set((31...40).map { String($0, radix: 16) }))

        // Removed: brand-b's paths answer 404 again.
        try Self.config(defaultHost: defaultHost.url, tenants: [("brand-a", brandA2.url)]).write(toFile: path, atomically: true, encoding: .utf8)
        try await Self.reload(child, expecting: 3, of: reloaded)
        #expect(try await http.get(url + "/brand-b/r/?id=h3,d1,1").status == 404)

        // A broken file: an error naming the file, line and key; the tenants stay.
        try (Self.config(defaultHost: defaultHost.url, tenants: [("brand-a", brandA2.url)]) + "[tenant.brand-c]\ntraking-host = \"x\"\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        try await Self.reload(child, expecting: 1, of: "could not reload the tenants")
        #expect(child.text.contains("\(path):"), "\(child.text.suffix(1000))")
        #expect(child.text.contains("traking-host of [tenant.brand-c]"))
        #expect(try await http.get(url + "/brand-a/r/?id=h29,d1,1").status == 200)
        #expect(try await http.get(url + "/brand-c/r/?id=h1,d1,1").status == 404)
        #expect(child.process.isRunning)
        await http.shutdown()
        // The relay first: an emulator stopped under a connection the relay holds can trap in NIO.
        await child.stop()
        for emulator in [defaultHost, brandA, brandA2, brandB] { await emulator.stop() }
    }
}

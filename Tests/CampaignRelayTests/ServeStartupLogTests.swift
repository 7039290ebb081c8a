import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// What `serve` says as it starts: one line per thing configured, read by an operator before
/// anything else, and nothing alarming on a new directory.
@Suite("serve's first lines", .serialized, .timeLimit(.minutes(5)), .tier(.fast))
struct ServeStartupLogTests {
    /// The messages `serve` logged before it listened, without times and levels, in order: the
    /// text after the logger's label.
    static func startLines(_ output: String) -> [String] {
        var lines: [String] = []
        for line in output.split(separator: "\n") {
            guard let label = line.range(of: "campaign-relay: ") else { continue }
            let message = String(line[label.upperBound...])
            if message.contains("campaign-relay listening") { break }
            lines.append(message)
        }
        return lines
    }

    @Test("serve logs its key, each tenant's destinations, its counting and its retention and archive, one line each; a new directory is no alarm")
    func onePerThingConfigured() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("serve-start")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let keyFile = "\(directory)/keys"
        try Data("k7:\(Data(TestKeys.bytes("k7")).base64EncodedString())\n".utf8).write(to: URL(fileURLWithPath: keyFile))
        #expect(chmod(keyFile, 0o600) == 0)
        let config = "\(directory)/relay.toml"
        try """
        data-dir = "\(directory)/data"
        tracking-host = "http://127.0.0.1:9"
        encryption-key-file = "\(keyFile)"
        retain = "36h"
        retain-bytes = "2GiB"

        [tenant.brand-a]
        tracking-host = "http://127.0.0.1:10"
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let server = try ChildProcess(binary, ["serve", "--config", config, "--bind", "127.0.0.1:0", "--archive-dir", "\(directory)/archive"])
        defer { server.stopWithoutWaiting() }
        _ = try await server.await(#"campaign-relay (listening)"#)
        let lines = Self.startLines(server.text).filter { !$0.contains("this data directory is a new relay") }
        #expect(
            lines == [
                "key-id=k7 [RelayServer] encryption at rest on: new frames are sealed with the newest key",
                "marketing-host=none tracking-host=http://127.0.0.1:9 [RelayServer] forwarding the default tenant's events",
                "marketing-host=none tenant=brand-a tracking-host=http://127.0.0.1:10 [RelayServer] forwarding a tenant's events",
                "data-dir=\(directory)/data [RelayServer] counting per delivery into aggregates.sqlite",
                "archive=\(directory)/archive retain=36h retain-bytes=2GiB [RelayServer] keeping forwarded segments, then archiving them",
            ], "\(server.text)")
        #expect(!server.text.contains("aggregates database missing"), "a new directory has nothing to rebuild: \(server.text)")
        await server.stop()

        // Without hosts or counting, and without a key: each said as plainly.
        let bare = try ChildProcess(binary, ["serve", "--data-dir", "\(directory)/bare", "--bind", "127.0.0.1:0", "--no-aggregates"])
        defer { bare.stopWithoutWaiting() }
        _ = try await bare.await(#"campaign-relay (listening)"#)
        #expect(
            Self.startLines(bare.text).filter { !$0.contains("this data directory is a new relay") } == [
                "[RelayServer] encryption at rest off: the log holds events in the clear",
                "[RelayServer] not forwarding the default tenant's events: no --tracking-host or --marketing-host; they are stored and counted",
                "[RelayServer] not counting (--no-aggregates): `campaign-relay aggregate` can catch up later",
                "retain=24h retain-bytes=10GiB [RelayServer] keeping forwarded segments, then deleting them (no --archive-dir)",
            ], "\(bare.text)")
        await bare.stop()

        // A log with events and no counts is rebuilt, and that is worth a notice.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: "\(directory)/data/aggregates.sqlite\(suffix)") }
        let ingest = try await RelayBinary.run(
            binary, ["ingest", "--config", config, "-"], input: Data(#"{"kind":"track","action":"open","messageId":"1","deliveryId":"d1"}"#.utf8))
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let again = try ChildProcess(binary, ["serve", "--config", config, "--bind", "127.0.0.1:0"])
        defer { again.stopWithoutWaiting() }
        _ = try await again.await(#"campaign-relay (listening)"#)
        #expect(again.text.contains("aggregates database missing; building it from the log"), "\(again.text)")
        await again.stop()
    }
}

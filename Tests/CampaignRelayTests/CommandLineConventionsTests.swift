import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

@testable import CampaignRelay

#if canImport(Glibc)
    import Glibc
#endif

/// What a user sees when a command fails: usage errors exit 64 with usage, runtime errors exit 1
/// with the command's own message.
@Suite("Command-line errors", .timeLimit(.minutes(10)), .tier(.fast))
struct CommandLineConventionsTests {
    static func scratch(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)").path
    }

    @Test(
        "runtime errors exit 1 with the subcommand's message and no usage",
        arguments: [
            (["ingest", "nope.jsonl"], "Error: cannot open nope.jsonl"),
            (["replay", "--from", "1"], "Error: no Campaign host to send to"),
            (["serve", "--bind", "0.0.0.0:0"], "Error: refusing to listen on 0.0.0.0 without --admin-token"),
        ])
    func runtimeErrors(arguments: [String], message: String) async throws {
        let directory = Self.scratch("cli")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let run = try await RelayBinary.run(try RelayBinary.path(), arguments + ["--data-dir", directory])
        #expect(run.status == 1, "\(arguments): \(run.status) \(run.stderr)")
        #expect(run.stderr.hasPrefix(message), "\(run.stderr)")
        #expect(!run.stderr.contains("USAGE:"), "a runtime error is not a usage error: \(run.stderr)")
    }

    @Test("deadletter retry --id of a letter that does not exist: exit 1, pointing at deadletter list")
    func unknownDeadLetter() async throws {
        let binary = try RelayBinary.path()
        let directory = Self.scratch("cli-dead")
        let missing = try await RelayBinary.run(binary, ["deadletter", "retry", "--id", "99", "--data-dir", directory])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("Error: no data directory at \(directory)"), "\(missing.stderr)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let unknown = try await RelayBinary.run(binary, ["deadletter", "retry", "--id", "99", "--data-dir", directory])
        #expect(unknown.status == 1)
        #expect(
            unknown.stderr == "Error: no pending dead letter with id 99 in \(directory)/forwarding.sqlite; see campaign-relay deadletter list\n",
            "\(unknown.stderr)")
    }

    @Test("--log-format json: every stderr line a JSON object while results stay text; --json with --log-format text: the reverse")
    func logFormat() async throws {
        let binary = try RelayBinary.path()
        let directory = Self.scratch("cli-log-format")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let events = Data(#"{"kind":"track","action":"open","messageId":"1","deliveryId":"d"}"#.utf8 + [0x0A])
        let jsonLogs = try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", "\(directory)/a", "--log-format", "json"], input: events)
        #expect(jsonLogs.status == 0, "\(jsonLogs.stderr)")
        let lines = jsonLogs.stderr.split(separator: "\n")
        #expect(!lines.isEmpty, "a new data directory is logged")
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["message"] is String && object?["level"] is String, "not a JSON log line: \(line)")
        }
        #expect(jsonLogs.stdout.hasPrefix("accepted 1 event ("), "results stay text without --json: \(jsonLogs.stdout)")

        let textLogs = try await RelayBinary.run(
            binary, ["ingest", "-", "--data-dir", "\(directory)/b", "--json", "--log-format", "text"], input: events)
        #expect(textLogs.status == 0, "\(textLogs.stderr)")
        #expect(!textLogs.stderr.isEmpty && !textLogs.stderr.hasPrefix("{"), "text log lines: \(textLogs.stderr)")
        #expect((try? JSONSerialization.jsonObject(with: Data(textLogs.stdout.utf8))) is [String: Any], "\(textLogs.stdout)")
        let wrong = try await RelayBinary.run(binary, ["ingest", "-", "--log-format", "xml"])
        #expect(wrong.status == 64 && wrong.stderr.contains("xml"), "\(wrong.stderr)")
    }

    @Test("usage errors keep exit 64 and the usage")
    func usageErrors() async throws {
        let run = try await RelayBinary.run(try RelayBinary.path(), ["serve", "--bind", "nonsense"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("Usage: campaign-relay serve") || run.stderr.contains("USAGE:"), "\(run.stderr)")
        let cache = try await RelayBinary.run(try RelayBinary.path(), ["serve", "--aggregator-cache-mib", "0"])
        #expect(cache.status == 64)
        #expect(cache.stderr.hasPrefix("Error: --aggregator-cache-mib must be at least 1\n"), "\(cache.stderr)")
        // A host URL given as a flag is checked with the other values, before anything runs (and
        // so `config check` refuses it in a file).
        let host = try await RelayBinary.run(try RelayBinary.path(), ["upload", "--tracking-host", "ftp://x"])
        #expect(host.status == 64, "\(host.status) \(host.stderr)")
        #expect(host.stderr.hasPrefix("Error: --tracking-host ftp://x: scheme ftp is not https or http\n"), "\(host.stderr)")
    }

    @Test("a host URL from the environment that is not one: exit 1 with the message, no usage (the command line was right)")
    func hostFromTheEnvironment() async throws {
        let directory = Self.scratch("cli-env")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let run = try await BoundedRun.run(
            "/usr/bin/env", ["CAMPAIGN_RELAY_TRACKING_HOST=ftp://x", try RelayBinary.path(), "upload", "--data-dir", directory], seconds: 60)
        #expect(run.ending == .exited(1), "\(run.ending) \(run.stderr)")
        #expect(run.stderr.hasPrefix("Error: --tracking-host ftp://x: scheme ftp is not https or http"), "\(run.stderr)")
        #expect(!run.stderr.contains("USAGE:") && !run.stderr.contains("Usage:"), "\(run.stderr)")
    }

    @Test("a port in use: exit 1, and the message names the address and what to do")
    func portInUse() async throws {
        // Hold a port with a listening socket of this process.
        let held = try #require(LoopbackSocket.bound())
        defer { close(held.descriptor) }
        try #require(listen(held.descriptor, 1) == 0)
        let port = held.port

        let run = try await RelayBinary.run(try RelayBinary.path(), ["serve", "--bind", "127.0.0.1:\(port)", "--data-dir", Self.scratch("busy")])
        #expect(run.status == 1)
        #expect(
            run.stderr.contains(
                "Error: cannot listen on 127.0.0.1:\(port): the address is already in use (another campaign-relay or program listens there); stop it, or choose another --bind"
            ),
            "\(run.stderr)"
        )
        #expect(!run.stderr.contains("errno"), "no socket-call jargon: \(run.stderr)")
    }
}

/// Help that reads well at 80 columns: no description wrapped into a broken line.
@Suite("Help text", .tier(.fast))
struct HelpTextTests {
    @Test("top-level and serve help keep their examples and endpoint lines whole at 80 columns")
    func layout() async throws {
        let binary = try RelayBinary.path()
        let top = try await RelayBinary.run("/usr/bin/env", ["COLUMNS=80", binary, "--help"])
        let topLines = top.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(topLines.contains(#"  {"kind":"track","action":"open","messageId":"55336","deliveryId":"f0190"}"#), "\(top.stdout)")
        #expect(topLines.contains(#"   "registrationToken":"fcm-token","userKey":"ada"}"#))
        let serve = try await RelayBinary.run("/usr/bin/env", ["COLUMNS=80", binary, "help", "serve"])
        let serveLines = serve.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for line in ["  GET  /r/?id=h{messageId},{deliveryId},{tag}", "      tracking hits (tag 1 impression, 2 open)", "  POST /v1/events"] {
            #expect(serveLines.contains(line), "missing whole line \(line)")
        }
        for command in ["serve", "ingest", "aggregate", "stats", "upload", "replay", "deadletter", "emulate", "wal"] {
            let help = try await RelayBinary.run("/usr/bin/env", ["COLUMNS=80", binary, "help", command])
            for line in help.stdout.split(separator: "\n") where line.count > 80 && !line.hasPrefix("USAGE:") {
                Issue.record("help \(command): a line of \(line.count) columns: \(line)")
            }
        }
    }

    @Test("counts read as English: 1 dead letter, 2 dead letters")
    func plurals() {
        #expect(counted(1, "dead letter") == "1 dead letter")
        #expect(counted(2, "dead letter") == "2 dead letters")
        #expect(counted(0, "entry", "entries") == "0 entries")
    }
}

/// What `upload` says when it cannot reach a host.
@Suite("Upload failure messages", .timeLimit(.minutes(10)), .tier(.fast))
struct UploadFailureMessageTests {
    @Test("an unreachable host: the first failure is logged at once, in words; stopping logs no failure")
    func unreachableHost() async throws {
        let binary = try RelayBinary.path()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("unreachable-\(UUID().uuidString)").path
        let line = #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t"}"# + "\n"
        #expect(try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", directory], input: Data(line.utf8)).status == 0)
        // Port 1 on loopback refuses connections. Once the upload has logged its first failure it
        // is stopped with SIGTERM, as an operator's Ctrl-C or `timeout` would.
        let upload = try ChildProcess(binary, ["upload", "--marketing-host", "http://127.0.0.1:1", "--data-dir", directory])
        _ = try await upload.await(#"marketing host failed: cannot reach http://127\.0\.0\.1:1: connection refused; (retrying) in"#, seconds: 120)
        await upload.stop()
        #expect(upload.process.terminationReason == .exit, "\(upload.text)")
        // Standard output and standard error, in one.
        let run = (stdout: upload.text, stderr: upload.text)
        #expect(!run.stderr.contains("errno"), "no socket-call jargon: \(run.stderr)")
        #expect(!run.stderr.contains("CancellationError"), "stopping is not a failure of the host: \(run.stderr)")
        #expect(run.stdout.contains("delivered 0 events") && run.stdout.contains("backlog 1"), "\(run.stdout)")
        #expect(!run.stdout.contains("events/s"), "no rate of nothing delivered: \(run.stdout)")
    }
}

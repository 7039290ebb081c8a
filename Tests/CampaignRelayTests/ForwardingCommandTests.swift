import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// `replay` and `deadletter` as a user runs them, against the emulator over loopback.
@Suite("replay and deadletter commands", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct ForwardingCommandTests {
    func ingest(_ binary: String, _ directory: String, _ lines: [String]) async throws {
        let run = try await RelayBinary.run(
            binary, ["ingest", "-", "--data-dir", directory, "--json"], input: Data((lines.joined(separator: "\n") + "\n").utf8))
        try #require(run.status == 0, "\(run.stderr)")
    }

    func hitLine(_ id: Int, hour: Int) -> String {
        #"{"kind":"track","action":"open","messageId":"\#(id)","deliveryId":"f0190","time":"2026-11-21T\#(hour < 10 ? "0" : "")\#(hour):00:00Z"}"#
    }

    @Test("replay re-sends exactly a sequence range or a time range, at the rate asked, without moving the uploader")
    func replay() async throws {
        let binary = try RelayBinary.path()
        let running = try await RunningEmulator.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Ids 1…24, one per hour of 2026-11-21.
        try await ingest(binary, directory, (1...24).map { hitLine($0, hour: $0 - 1) })

        let bySequence = try await RelayBinary.run(
            binary, ["replay", "--from", "5", "--to", "8", "--tracking-host", running.url, "--data-dir", directory, "--json"])
        #expect(bySequence.status == 0, "\(bySequence.stderr)")
        #expect(Set(await running.emulator.recorder.hits.keys.map(\.messageId)) == Set((5...8).map { String($0, radix: 16) }))
        // The replay's lanes are the uploader's: hits went through the pipeline (the only sender
        // that names itself), not one AsyncHTTPClient request at a time.
        let replayed = await running.emulator.recorder.lastRequests(4)
        #expect(replayed.count == 4)
        #expect(replayed.allSatisfy { $0.headers.contains(["User-Agent", "campaign-relay"]) }, "\(replayed.map(\.headers))")

        await running.emulator.recorder.reset()
        let started = Date()
        let byTime = try await RelayBinary.run(
            binary,
            [
                "replay", "--from", "2026-11-21T10:00:00Z", "--to", "2026-11-21T20:00:00+00:00", "--max-rate", "20", "--tracking-host", running.url,
                "--data-dir", directory, "--json",
            ]
        )
        let seconds = Date().timeIntervalSince(started)
        #expect(byTime.status == 0, "\(byTime.stderr)")
        // Hours 10…19 are ids 11…20.
        #expect(Set(await running.emulator.recorder.hits.keys.map(\.messageId)) == Set((11...20).map { String($0, radix: 16) }))
        // The ceiling (RateCeiling) spreads 20 a second over 900 ms: 45 ms apart after the first.
        #expect(seconds >= 0.405, "10 events at 20/s take at least 9 × 45 ms, took \(seconds)")
        #expect(byTime.stdout.contains("\"delivered\":10"))
        // Replays keep no position: the uploader still has everything to send.
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/wal/cursors/upload-tracking.cursor"))
        await running.stop()
    }

    @Test(
        "upload --until-drained --max-attempts 4: a poison registration is tried 4 times, dead-lettered, and the run exits 0 with everything else delivered"
    )
    func poisonUpload() async throws {
        let binary = try RelayBinary.path()
        var faults = EmulatorFaults()
        faults.failingIntegrationKeys = ["poison"]
        let running = try await RunningEmulator.start(faults: faults)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("poison-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let poison = #"{"kind":"register","platform":"ios","integrationKey":"poison","registrationToken":"p"}"#
        let others = (1...30).map { #"{"kind":"register","platform":"android","integrationKey":"app","registrationToken":"t\#($0)"}"# }
        try await ingest(binary, directory, [poison] + others + (1...50).map { hitLine($0, hour: 1) })
        let upload = try await RelayBinary.run(
            binary,
            [
                "upload", "--until-drained", "--max-attempts", "4", "--backoff-base", "50", "--backoff-cap", "0.5", "--tracking-host", running.url,
                "--marketing-host", running.url, "--data-dir", directory, "--json",
            ]
        )
        #expect(upload.status == 0, "\(upload.stderr)")
        let requests = await running.emulator.recorder.lastRequests(1000)
        #expect(requests.filter { $0.body.contains("mobileAppUuid=poison") }.count == 4)
        #expect(await running.emulator.recorder.acceptedRegistrations.count == 30)
        #expect(await running.emulator.recorder.acceptedHits == 50)
        let letters = try await RelayBinary.run(binary, ["deadletter", "list", "--data-dir", directory, "--json"])
        #expect(letters.stdout.contains(#""status":500"#), "\(letters.stdout)")
        #expect(letters.stdout.contains("4 failed attempts (the maximum) while the host answered others"))
        await running.stop()
    }

    @Test("deadletter list shows the rejection; retry re-queues it and the uploader delivers it")
    func deadLetterRetry() async throws {
        let binary = try RelayBinary.path()
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["known"]
        let running = try await RunningEmulator.start(faults: faults)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dead-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ingest(
            binary, directory,
            [
                #"{"kind":"register","platform":"ios","integrationKey":"later","registrationToken":"aa01","time":"2026-11-21T10:00:00Z"}"#,
                #"{"kind":"register","platform":"ios","integrationKey":"known","registrationToken":"aa02","time":"2026-11-21T10:00:00Z"}"#,
            ])
        let upload = ["upload", "--until-drained", "--marketing-host", running.url, "--data-dir", directory, "--json"]
        let first = try await RelayBinary.run(binary, upload)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("\"deadLettered\":1"))
        let list = try await RelayBinary.run(binary, ["deadletter", "list", "--data-dir", directory, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])
        let letters = try #require(object["deadLetters"] as? [[String: Any]])
        #expect(letters.count == 1)
        #expect(letters.first?["status"] as? Int == 400)
        #expect(letters.first?["sequence"] as? Int == 1)
        #expect((letters.first?["responseBody"] as? String)?.contains("Unknown integration key 'later'") == true)
        // The HTTP API shows the same object, byte for byte.
        let server = try ChildProcess(binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory])
        let port = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let http = TestHTTPClient()
        let served = try await http.get("http://127.0.0.1:\(port)/v1/deadletters")
        await http.shutdown()
        await server.stop()
        #expect(served.body + "\n" == list.stdout, "GET /v1/deadletters: \(served.body)\ndeadletter list --json: \(list.stdout)")
        // The push token is personal data: a keyed hash stands for it, unless asked for.
        #expect(
            list.stdout.contains(
                /"event":\{"integrationKey":"later","kind":"register","platform":"ios","registrationToken":"hash:[0-9a-f]{12}","time":"2026-11-21T10:00:00Z"\}/
            ),
            "\(list.stdout)")
        #expect(!list.stdout.contains("aa01"))
        let revealed = try await RelayBinary.run(binary, ["deadletter", "list", "--data-dir", directory, "--json", "--reveal-personal-data"])
        #expect(
            revealed.stdout.contains(
                #""event":{"integrationKey":"later","kind":"register","platform":"ios","registrationToken":"aa01","time":"2026-11-21T10:00:00Z"}"#),
            "\(revealed.stdout)")

        // The app is set up in Campaign now; re-queue and deliver.
        running.emulator.currentFaults = EmulatorFaults()
        let retry = try await RelayBinary.run(binary, ["deadletter", "retry", "--all", "--data-dir", directory, "--json"])
        #expect(retry.stdout.contains("\"sequence\":3"), "\(retry.stdout) \(retry.stderr)")
        let second = try await RelayBinary.run(binary, upload)
        #expect(second.status == 0)
        let registrations = await running.emulator.recorder.acceptedRegistrations
        #expect(registrations.map { $0["mobileAppUuid"] ?? "" } == ["known", "later"])
        let after = try await RelayBinary.run(binary, ["deadletter", "list", "--data-dir", directory])
        #expect(after.stdout.contains("no dead letters"))
        // The re-queued copy keeps the identity of sequence 1: the aggregates count 2 registrations, not 3.
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--from", "3", "--data-dir", directory])
        #expect(dump.stdout.contains(#""origin":{"sequence":1}"#), "\(dump.stdout)")
        let aggregate = try await RelayBinary.run(binary, ["aggregate", "--data-dir", directory])
        #expect(aggregate.status == 0, "\(aggregate.stderr)")
        let stats = try await RelayBinary.run(binary, ["stats", "--data-dir", directory, "--json"])
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
        let apps = try #require(counts["registrations"] as? [[String: Any]], "\(stats.stdout)")
        #expect(apps.map { $0["registrations"] as? Int ?? -1 }.reduce(0, +) == 2, "\(stats.stdout)")
        #expect(apps.first { $0["integrationKey"] as? String == "later" }?["registrations"] as? Int == 1)
        await running.stop()
    }

    @Test("replay against a rejecting host, twice: one dead letter per event, the replays' rejections reported")
    func replayRejections() async throws {
        let binary = try RelayBinary.path()
        var faults = EmulatorFaults()
        faults.knownIntegrationKeys = ["known"]
        let running = try await RunningEmulator.start(faults: faults)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replay-rejects-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ingest(
            binary, directory,
            [
                #"{"kind":"register","platform":"ios","integrationKey":"known","registrationToken":"aa01"}"#,
                #"{"kind":"register","platform":"ios","integrationKey":"stranger","registrationToken":"aa02"}"#,
            ])
        let upload = try await RelayBinary.run(
            binary, ["upload", "--until-drained", "--marketing-host", running.url, "--data-dir", directory, "--json"])
        #expect(upload.stdout.contains("\"deadLettered\":1"), "\(upload.stdout)")
        for _ in 0..<2 {
            let replay = try await RelayBinary.run(
                binary, ["replay", "--from", "1", "--marketing-host", running.url, "--data-dir", directory, "--json"])
            #expect(replay.status == 0, "\(replay.stderr)")
            #expect(replay.stdout.contains("\"rejected\":1"), "\(replay.stdout)")
            #expect(replay.stdout.contains("\"deadLettered\":0"))
        }
        let list = try await RelayBinary.run(binary, ["deadletter", "list", "--data-dir", directory, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])
        #expect((object["deadLetters"] as? [[String: Any]])?.map { $0["sequence"] as? Int } == [2])
        await running.stop()
    }
}

import CampaignEmulator
import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// Registrations' personal data (push token, user key, device IMEI, name and model, parameter
/// values) stays out of everything the relay prints and serves besides the events themselves
/// (`wal dump`, `--reveal-personal-data`): log lines at trace level, answers and their errors,
/// listings, the status, the metrics.
@Suite("Personal data stays out of logs, answers, listings and metrics", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct PersonalDataLeakTests {
    /// Lowercase letters and digits, so each reads the same in JSON, form encoding and XML.
    static let canary = "pdcanary"

    static func form(_ index: Int, key: String = "app") -> String {
        "registrationToken=pdcanarytoken\(index)&mobileAppUuid=\(key)&userKey=pdcanaryuser\(index)&deviceImei=pdcanaryimei\(index)"
            + "&deviceName=pdcanarydevice\(index)&deviceModel=pdcanarymodel\(index)"
            + "&additionalParams=%3CadditionalParameters%3E%3Cparam%20name%3D%22k%22%20value%3D%22pdcanaryparam\(index)%22%2F%3E%3C%2FadditionalParameters%3E"
    }

    @Test("a run with retries, dead letters and refused input prints and serves no canary; Campaign got them all")
    func nothingLeaks() async throws {
        let binary = try RelayBinary.path()
        var faults = EmulatorFaults()
        faults.failureRate = 0.3
        faults.failureStatus = 500
        faults.knownIntegrationKeys = ["app"]
        let campaign = try await RunningEmulator.start(faults: faults)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pd-leak-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hosts = ["--tracking-host", campaign.url, "--marketing-host", campaign.url, "--backoff-base", "5", "--backoff-cap", "0.05"]
        // Campaign fails 30 % of requests at random: with 20 attempts, a good registration is
        // dead-lettered with a chance of 0.3^20 (with 3 it was 0.3^3, 2.7 %: one run in 13 waited in
        // vain for Campaign's three answers). The stranger's 400 is dead-lettered at once.
        let server = try ChildProcess(
            binary,
            ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--log-level", "trace", "--log-format", "json", "--max-attempts", "20"]
                + hosts
        )
        let url = "http://127.0.0.1:\(try await server.await(#""address":"127\.0\.0\.1:(\d+)""#))"
        let http = TestHTTPClient()
        var printed: [String: String] = [:]

        for index in 1...3 {
            #expect(try await http.post(url + "/nms/mobile/1/registerAndroid.jssp", Self.form(index), headers: formHeaders).status == 200)
        }
        // Campaign refuses this app: a dead letter.
        #expect(try await http.post(url + "/nms/mobile/1/registerIOS.jssp", Self.form(4, key: "stranger"), headers: formHeaders).status == 200)
        // Refused here: a form that is not form data, a JSON registration without its app's key.
        let badForm = try await http.post(
            url + "/nms/mobile/1/registerIOS.jssp", "registrationToken=pdcanarytoken5%ZZ&mobileAppUuid=app", headers: formHeaders)
        #expect(badForm.status == 400)
        printed["bad form answer"] = badForm.body
        let badJSON = try await http.post(
            url + "/v1/events",
            #"[{"kind":"register","platform":"ios","registrationToken":"pdcanarytoken6","userKey":"pdcanaryuser6","osLanguage":7}]"#)
        #expect(badJSON.status == 400)
        printed["bad JSON answer"] = badJSON.body
        try await eventually("Campaign's answers to the four registrations") {
            let accepted = await campaign.emulator.recorder.acceptedRegistrations.count
            let letters = try await http.get(url + "/v1/deadletters").body
            return accepted == 3 && letters.contains("hash:")
        }
        for path in ["/status", "/v1/status", "/metrics", "/readyz", "/healthz", "/v1/deadletters", "/v1/deliveries"] {
            printed["GET \(path)"] = try await http.get(url + path).body
        }
        await http.shutdown()
        await server.stop()
        printed["serve"] = server.text

        // The commands, with the log free: refused lines, an upload with faults, listings, counts, a replay.
        let lines = [
            #"{"kind":"register","platform":"android","integrationKey":"app","registrationToken":"pdcanarytoken7 x","userKey":"pdcanaryuser7"}"#,
            #"{"kind":"register","platform":"ios","registrationToken":"pdcanarytoken8","userKey":"pdcanaryuser8"}"#,
            #"{"kind":"register","platform":"ios","integrationKey":"stranger","registrationToken":"pdcanarytoken9","userKey":"pdcanaryuser9","deviceName":"pdcanarydevice9"}"#,
        ]
        let ingest = try await RelayBinary.run(
            binary, ["ingest", "-", "--data-dir", directory, "--log-level", "trace"], input: Data((lines.joined(separator: "\n") + "\n").utf8))
        printed["ingest"] = ingest.stdout + ingest.stderr
        for (name, arguments) in [
            ("upload", ["upload", "--until-drained", "--max-attempts", "3", "--log-level", "trace"] + hosts),
            ("deadletter list", ["deadletter", "list"]), ("deadletter list --json", ["deadletter", "list", "--json"]),
            ("stats", ["stats", "--log-level", "trace"]), ("wal verify", ["wal", "verify"]),
            ("replay", ["replay", "--from", "1", "--log-level", "trace"] + hosts),
            ("erase --dry-run", ["erase", "--registration-token", "pdcanarytoken7 x", "--dry-run", "--log-level", "trace"]),
            ("erase", ["erase", "--user-key", "pdcanaryuser7", "--log-level", "trace"]),
            ("erase --json", ["erase", "--registration-token", "pdcanarytoken1", "--json", "--log-level", "trace"]),
            ("erase --list", ["erase", "--list"]), ("erase --list --json", ["erase", "--list", "--json"]),
        ] {
            let run = try await RelayBinary.run(binary, arguments + ["--data-dir", directory])
            printed[name] = run.stdout + run.stderr
        }
        await campaign.stop()

        for (source, text) in printed.sorted(by: { $0.key < $1.key }) {
            let found = text.matches(of: /pdcanary[a-z0-9]*/).map { String($0.output) }
            #expect(found.isEmpty, "\(source) shows personal data: \(Set(found).sorted())")
        }
        // The canaries did go through: the listing shows them when asked, and Campaign got them.
        let revealed = try await RelayBinary.run(binary, ["deadletter", "list", "--json", "--reveal-personal-data", "--data-dir", directory])
        #expect(revealed.stdout.contains("pdcanarytoken4") && revealed.stdout.contains("pdcanaryuser9"))
        let bodies = await campaign.emulator.recorder.lastRequests(1000).map(\.body).joined()
        for value in ["pdcanarytoken1", "pdcanaryuser2", "pdcanaryimei3", "pdcanarydevice1", "pdcanarymodel2", "pdcanaryparam3"] {
            #expect(bodies.contains(value), "Campaign never got \(value)")
        }
        #expect(printed["deadletter list --json"]?.contains("hash:") == true)
        // The erasures did erase (their outputs were worth searching).
        #expect(printed["erase"]?.contains("erased 1 registration (1 entry in the log)") == true, "\(printed["erase"] ?? "")")
        #expect(printed["erase --list"]?.contains("user-key hash:") == true, "\(printed["erase --list"] ?? "")")
    }
}

import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import Testing

/// `GET /status` in a real browser: headless Chromium (Debian's `chromium`, installed by
/// `.ci/run`) loads the page from a real `serve`, runs its scripts and fetches, and the test reads
/// the rendered DOM (`--dump-dom`) and a screenshot.
@Suite("The status page in a real browser", .serialized, .timeLimit(.minutes(10)))
struct StatusPageTests {
    static func chromium() throws -> String {
        try #require(
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "Chromium is needed: apt-get install chromium (.ci/run installs it)")
    }

    /// Runs headless Chromium on `url` with `arguments` (`--dump-dom`, `--screenshot=…`), letting
    /// the page's timers and fetches run for 6 s of virtual time.
    static func browse(_ url: String, _ arguments: [String]) async throws -> BoundedRun {
        let profile = temporaryDirectory("chromium-profile")
        defer { removeTree(profile) }
        let run = try await BoundedRun.run(
            try chromium(),
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
                "--user-data-dir=\(profile)",
                "--hide-scrollbars", "--window-size=1280,1000", "--virtual-time-budget=6000",
            ] + arguments + [url], seconds: 90)
        #expect(run.ending == .exited(0), "chromium: \(run.ending) \(run.stderr.suffix(2000))")
        return run
    }

    /// The text of the cell `field` in the row whose `attribute` is `value`, from a dumped DOM.
    static func cell(_ dom: String, row attribute: String, _ value: String, field: String) -> String? {
        guard let start = dom.range(of: "<tr data-\(attribute)=\"\(value)\"") else { return nil }
        let row = dom[start.upperBound...]
        guard let end = row.range(of: "</tr>") else { return nil }
        let text = String(row[..<end.lowerBound])
        guard let pattern = try? Regex(#"data-field="\#(field)">([^<]*)<"#) else { return nil }
        return text.firstMatch(of: pattern).flatMap { $0.output[1].substring.map(String.init) }
    }

    @Test(
        "after known traffic, with Campaign unreachable: the delivery ids and their exact counts, a backlog, the oldest unsent event's age; the screenshot is not blank"
    )
    func knownTraffic() async throws {
        let binary = try RelayBinary.path()
        _ = try Self.chromium()
        let directory = temporaryDirectory("status-page")
        defer { removeTree(directory) }
        // Nothing listens on port 1: the tracking lane fails and keeps every hit.
        let server = try ChildProcess(
            binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--tracking-host", "http://127.0.0.1:1", "--retain", "36h"])
        defer { server.stop() }
        let url = "http://127.0.0.1:\(try await server.await(#"address=127\.0\.0\.1:(\d+)"#))"
        let http = TestHTTPClient()
        let hit = { (action: String, message: Int, delivery: String) in
            #"{"kind":"track","action":"\#(action)","messageId":"\#(message)","deliveryId":"\#(delivery)"}"#
        }
        let events = [
            hit("impression", 1, "f0190"), hit("impression", 1, "f0190"), hit("impression", 2, "f0190"), hit("open", 1, "f0190"),
            hit("click", 1, "f0190"), hit("click", 9, "f4242"),
        ]
        #expect(try await http.post(url + "/v1/events", "[\(events.joined(separator: ","))]").status == 200)
        // Until the aggregator has counted all 6 and the sampler has seen the lane owe them.
        var ready = false
        for _ in 0..<100 where !ready {
            let status = try await http.get(url + "/v1/status").body
            let deliveries = try await http.get(url + "/v1/deliveries").body
            ready = deliveries.contains(#""aggregatedThrough":6"#) && status.contains(#""backlog":6"#) && status.contains("oldestUnsentSeconds")
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(ready, "the relay never showed all 6 counted and owed")
        await http.shutdown()

        let dom = try await Self.browse(url + "/status", ["--dump-dom"]).stdout
        let expected: [(String, String, String)] = [
            ("f0190", "impressions", "3"), ("f0190", "unique-impressions", "2"), ("f0190", "opens", "1"), ("f0190", "unique-opens", "1"),
            ("f0190", "clicks", "1"), ("f0190", "unique-clicks", "1"), ("f4242", "impressions", "0"), ("f4242", "clicks", "1"),
            ("f4242", "unique-clicks", "1"),
        ]
        for (delivery, field, value) in expected {
            #expect(Self.cell(dom, row: "delivery", delivery, field: field) == value, "\(delivery) \(field) in \(dom.suffix(4000))")
        }
        #expect(Self.cell(dom, row: "destination", "tracking", field: "backlog") == "6", "\(dom.suffix(4000))")
        let age = try #require(Self.cell(dom, row: "destination", "tracking", field: "oldest-unsent"), "\(dom.suffix(4000))")
        #expect(age.hasSuffix(" s") && age != "–", "the oldest unsent event's age: \(age)")
        #expect(Self.cell(dom, row: "destination", "tracking", field: "last-error")?.contains("cannot reach") == true)
        #expect(dom.contains(#"<span id="log-first">1</span>"#), "the range kept starts at sequence 1")
        #expect(dom.contains(#"<span id="log-first-time">(20"#), "and its first event's time")
        #expect(
            dom.contains(#"<div class="muted" id="log-retention">passed segments kept 36.0 h within 10.0 GiB; 0 gone since start</div>"#),
            "the retention: \(dom.suffix(4000))")
        #expect(!dom.contains(#"<form id="login" method="post" action="/status" autocomplete="off">"#), "no login form on loopback")

        // A screenshot with the figures, against one of a blank page of the same size.
        let shot = "\(directory)-status.png"
        let blank = "\(directory)-blank.png"
        defer {
            try? FileManager.default.removeItem(atPath: shot)
            try? FileManager.default.removeItem(atPath: blank)
        }
        _ = try await Self.browse(url + "/status", ["--screenshot=\(shot)"])
        _ = try await Self.browse("about:blank", ["--screenshot=\(blank)"])
        let shotBytes = try Data(contentsOf: URL(fileURLWithPath: shot))
        let blankBytes = try Data(contentsOf: URL(fileURLWithPath: blank))
        #expect(shotBytes.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
        #expect(shotBytes.count > 5 * blankBytes.count, "the page's screenshot (\(shotBytes.count) B) is not blank (\(blankBytes.count) B)")
        print("status page: screenshot \(shotBytes.count) bytes (a blank page: \(blankBytes.count) bytes) at \(shot)")
    }

    @Test("bound beyond loopback, without the token: the login form and not one figure; the figures' API answers 401")
    func loginWithoutToken() async throws {
        let binary = try RelayBinary.path()
        _ = try Self.chromium()
        let directory = temporaryDirectory("status-page-login")
        defer { removeTree(directory) }
        let token = "admin-token-0123456789"
        let server = try ChildProcess(binary, ["serve", "--bind", "0.0.0.0:0", "--data-dir", directory, "--admin-token", token])
        defer { server.stop() }
        let port = try await server.await(#"address=0\.0\.0\.0:(\d+)"#)
        let url = "http://127.0.0.1:\(port)"
        let http = TestHTTPClient()
        let hit = #"[{"kind":"track","action":"open","messageId":"5","deliveryId":"f0190"}]"#
        #expect(try await http.post(url + "/v1/events", hit).status == 200)
        #expect(try await http.get(url + "/v1/status").status == 401)
        #expect(try await http.get(url + "/v1/status", headers: [("Authorization", "Bearer \(token)")]).status == 200)
        let page = try await http.get(url + "/status")
        #expect(page.status == 200 && page.body.contains(#"<input id="token" type="password""#))
        #expect(!page.body.contains(#"name="token""#), "the token field has no name, so no form submission can carry it")
        await http.shutdown()

        let dom = try await Self.browse(url + "/status", ["--dump-dom"]).stdout
        #expect(dom.contains(#"<form id="login" method="post" action="/status" autocomplete="off">"#), "the login form is shown: \(dom.prefix(3000))")
        #expect(dom.contains(#"<main id="status" hidden="">"#), "the figures stay hidden")
        #expect(!dom.contains("f0190") && !dom.contains("data-field="), "no figure without the token: \(dom.suffix(3000))")
        #expect(!dom.contains(token))
    }
}

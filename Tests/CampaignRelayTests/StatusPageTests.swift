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

/// `GET /status` in a real browser: headless Chromium (Debian's `chromium`, installed by
/// `.ci/run`) loads the page from a real `serve`, runs its scripts and fetches, and the test reads
/// the rendered DOM (`--dump-dom`) and a screenshot.
@Suite("The status page in a real browser", .serialized, .timeLimit(.minutes(10)), .tier(.thorough))
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
        "after known traffic, with Campaign unreachable: the delivery ids and their exact counts, the registrations per app, a backlog, the oldest unsent event's age; the screenshot is not blank"
    )
    func knownTraffic() async throws {
        let binary = try RelayBinary.path()
        _ = try Self.chromium()
        let directory = temporaryDirectory("status-page")
        defer { removeTree(directory) }
        // Nothing listens on port 1: the tracking lane fails and keeps every hit.
        let server = try ChildProcess(
            binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory, "--tracking-host", "http://127.0.0.1:1", "--retain", "36h"])
        defer { server.stopWithoutWaiting() }
        let url = "http://127.0.0.1:\(try await server.await(#"address=127\.0\.0\.1:(\d+)"#))"
        let http = TestHTTPClient()
        let hit = { (action: String, message: Int, delivery: String) in
            #"{"kind":"track","action":"\#(action)","messageId":"\#(message)","deliveryId":"\#(delivery)"}"#
        }
        let events = [
            hit("impression", 1, "f0190"), hit("impression", 1, "f0190"), hit("impression", 2, "f0190"), hit("open", 1, "f0190"),
            hit("click", 1, "f0190"), hit("click", 9, "f4242"),
            #"{"kind":"register","platform":"ios","integrationKey":"app-ios","registrationToken":"t1"}"#,
            #"{"kind":"register","platform":"ios","integrationKey":"app-ios","registrationToken":"t2"}"#,
        ]
        #expect(try await http.post(url + "/v1/events", "[\(events.joined(separator: ","))]").status == 200)
        // Until the aggregator has counted all 8 and the sampler has seen the tracking lane's backlog:
        // the 6 hits it cannot deliver, and the 2 registrations after them that it has not passed.
        var ready = false
        for _ in 0..<100 where !ready {
            let status = try await http.get(url + "/v1/status").body
            let deliveries = try await http.get(url + "/v1/deliveries").body
            ready = deliveries.contains(#""aggregatedThrough":8"#) && status.contains(#""backlog":8"#) && status.contains("oldestUnsentSeconds")
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(ready, "the relay never showed all 8 counted and owed")
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
        #expect(Self.cell(dom, row: "destination", "tracking", field: "backlog") == "8", "\(dom.suffix(4000))")
        // The requests in flight to the host and their adaptive limit: a host that never answered
        // gives it nothing to grow on (its failures halve it, to one); no rate ceiling.
        let inFlight = try #require(Self.cell(dom, row: "destination", "tracking", field: "concurrency"), "\(dom.suffix(4000))")
        #expect(inFlight.wholeMatch(of: /[01] of 1 \(adaptive, at most 8\)/) != nil, "\(inFlight)")
        #expect(Self.cell(dom, row: "destination", "tracking", field: "rate") == "–")
        // Registrations per app, as stats shows them.
        #expect(Self.cell(dom, row: "registration", "default/app-ios/ios", field: "registrations") == "2", "\(dom.suffix(4000))")
        #expect(Self.cell(dom, row: "registration", "default/app-ios/ios", field: "distinct-tokens") == "2", "\(dom.suffix(4000))")
        #expect(Self.cell(dom, row: "registration", "default/app-ios/ios", field: "app") == "app-ios", "\(dom.suffix(4000))")
        let age = try #require(Self.cell(dom, row: "destination", "tracking", field: "oldest-unsent"), "\(dom.suffix(4000))")
        #expect(age.hasSuffix(" s") && age != "–", "the oldest unsent event's age: \(age)")
        #expect(Self.cell(dom, row: "destination", "tracking", field: "last-error")?.contains("cannot reach") == true)
        #expect(dom.contains(#"<span id="log-first">1</span>"#), "the range kept starts at sequence 1")
        #expect(dom.contains(#"<span id="log-first-time">(20"#), "and its first event's time")
        #expect(
            dom.contains(#"<div class="muted" id="log-retention">passed segments kept 36.0 h within 10.0 GiB; 0 gone since start</div>"#),
            "the retention: \(dom.suffix(4000))")
        // The file log: an acknowledgement is on this machine's disk alone, and the page says so.
        #expect(
            dom.contains(#"an acknowledgement is on <span id="log-copies">1 copy</span> (<span id="log-store">this machine's disk</span>)"#),
            "the copies: \(dom.suffix(4000))")
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
        defer { server.stopWithoutWaiting() }
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

    @Test(
        "a tenant's admin token: /brand-a/status, logged in with it, shows brand-a's destinations and deliveries alone; /status with it shows the login form again (its 403 taken as 401)"
    )
    func tenantLogin() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("status-page-tenant")
        defer { removeTree(directory) }
        let (defaultHost, brandAHost, brandBHost) = (
            try await RunningEmulator.start(), try await RunningEmulator.start(), try await RunningEmulator.start()
        )
        let (globalToken, tokenA, tokenB) = ("global-admin-token-0123456789", "brand-a-admin-token-0123", "brand-b-admin-token-0123")
        let config = "\(directory)/relay.toml"
        try """
        data-dir = "\(directory)/data"
        tracking-host = "\(defaultHost.url)"

        [serve]
        admin-token = "\(globalToken)"

        [tenant.brand-a]
        tracking-host = "\(brandAHost.url)"
        admin-token = "\(tokenA)"

        [tenant.brand-b]
        tracking-host = "\(brandBHost.url)"
        admin-token = "\(tokenB)"
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let server = try ChildProcess(binary, ["serve", "--config", config, "--bind", "127.0.0.1:0"])
        defer { server.stopWithoutWaiting() }
        let url = "http://127.0.0.1:\(try await server.await(#"address=127\.0\.0\.1:(\d+)"#))"
        let http = TestHTTPClient()
        // One delivery per tenant.
        for path in ["/brand-a/r/?id=h1,fa,1", "/brand-b/r/?id=h1,fb,1", "/r/?id=h1,fd,1"] { #expect(try await http.get(url + path).status == 200) }
        let elsewhere = try await http.get(url + "/v1/status", headers: [("Authorization", "Bearer \(tokenA)")])
        #expect(elsewhere.status == 403, "brand-a's token on the relay's own figures: \(elsewhere.status) \(elsewhere.body)")
        await http.shutdown()

        let browser = try DevToolsBrowser(chromium: try Self.chromium())
        defer { browser.close() }
        let rows =
            "JSON.stringify([...document.querySelectorAll('#destinations tr')].map((r) => r.dataset.destination + ' | ' + r.cells[0].textContent))"
        let deliveries = "JSON.stringify([...document.querySelectorAll('#deliveries tr')].map((r) => r.dataset.delivery))"

        // brand-a's page with brand-a's token: brand-a's lane and delivery, nothing of the others'.
        let brandA = try await browser.open(url + "/brand-a/status")
        try await browser.logIn(brandA, token: tokenA)
        try await browser.waitFor(
            "brand-a's delivery on brand-a's page", in: brandA, "document.querySelector('#deliveries tr[data-delivery=\"fa\"]') !== null")
        #expect(try await browser.evaluate(rows, in: brandA) as? String == #"["tracking_brand-a | tracking of brand-a \#(brandAHost.url)"]"#)
        #expect(try await browser.evaluate(deliveries, in: brandA) as? String == #"["fa"]"#)

        // The relay's page with the relay's token, for contrast: every tenant's lane.
        let everything = try await browser.open(url + "/status")
        try await browser.logIn(everything, token: globalToken)
        try await browser.waitFor("three destinations", in: everything, "document.querySelectorAll('#destinations tr').length === 3")
        #expect(
            try await browser.evaluate(rows, in: everything) as? String
                == #"["tracking | tracking \#(defaultHost.url)","tracking_brand-a | tracking of brand-a \#(brandAHost.url)","tracking_brand-b | tracking of brand-b \#(brandBHost.url)"]"#
        )

        // The relay's page with brand-a's token (403 from /v1/status): the login form again.
        let refused = try await browser.open(url + "/status")
        try await browser.logIn(refused, token: tokenA, expectingRefusal: true)
        let state =
            "JSON.stringify([document.getElementById('login').hidden, document.getElementById('status').hidden, document.getElementById('problem').textContent, sessionStorage.getItem('campaign-relay-admin-token'), document.querySelectorAll('#destinations tr, #deliveries tr').length])"
        #expect(
            try await browser.evaluate(state, in: refused) as? String == #"[false,true,"",null,0]"#,
            "login shown, figures hidden, no error, token dropped")
        for emulator in [defaultHost, brandAHost, brandBHost] { await emulator.stop() }
    }
}

/// Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON
/// messages, each ended by a NUL byte, that Chromium reads on descriptor 3 and writes on 4), so a
/// test can type into a page and wait for what it shows, instead of a fixed virtual-time budget.
final class DevToolsBrowser: Sendable {
    private let process: SpawnedProcess
    private let profile: String
    /// The writing end of Chromium's descriptor 3.
    private let commands: Int32
    /// Each answer by the id of its command, as received.
    private let answers = NIOLockedValueBox<[Int: Data]>([:])
    private let nextID = Atomic<Int>(0)

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts Chromium with an empty profile of its own. A shell gives it the pipes as
    /// descriptors 3 and 4 (SpawnedProcess closes every descriptor above standard error).
    init(chromium: String) throws {
        profile = temporaryDirectory("chromium-devtools")
        let flags = [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
            "--user-data-dir=\(profile)", "--window-size=1280,1000", "--remote-debugging-pipe",
        ]
        let command = "exec '\(chromium)' \(flags.joined(separator: " ")) 3<&0 4>&1 1>/dev/null 0</dev/null"
        process = try SpawnedProcess("/bin/sh", ["-c", command], input: .pipe, output: .pipe, error: .nullDevice)
        guard let commands = process.standardInput, let events = process.standardOutput else { throw Failure(description: "no pipes") }
        self.commands = commands
        Thread { [answers] in
            var pending: [UInt8] = []
            readPipe(events) { bytes in
                pending += bytes
                while let end = pending.firstIndex(of: 0) {
                    let message = Data(pending[..<end])
                    pending.removeSubrange(...end)
                    if let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any], let id = object["id"] as? Int {
                        answers.withLockedValue { $0[id] = message }
                    }
                }
            }
            Glibc.close(events)
        }.start()
    }

    /// Sends `method` (to the page of `session`, or to the browser) and waits up to 60 s for its
    /// answer's `result`; throws the protocol's error.
    func call(_ method: String, _ parameters: [String: Any] = [:], session: String? = nil) async throws -> [String: Any] {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).newValue
        var message: [String: Any] = ["id": id, "method": method, "params": parameters]
        if let session { message["sessionId"] = session }
        var data = try JSONSerialization.data(withJSONObject: message)
        data.append(0)
        writeAll(data, to: commands)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let answer = answers.withLockedValue({ $0.removeValue(forKey: id) }) {
                let object = try JSONSerialization.jsonObject(with: answer) as? [String: Any] ?? [:]
                if let error = object["error"] { throw Failure(description: "\(method): \(error)") }
                return object["result"] as? [String: Any] ?? [:]
            }
            guard process.isRunning else { throw Failure(description: "\(method): Chromium is gone") }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw Failure(description: "\(method): no answer within 60 s")
    }

    /// Opens `url` in a new tab (a sessionStorage of its own) and returns the session that drives it.
    func open(_ url: String) async throws -> String {
        let target = try await call("Target.createTarget", ["url": url])["targetId"] as? String ?? ""
        let session = try await call("Target.attachToTarget", ["targetId": target, "flatten": true])["sessionId"] as? String
        return try #require(session, "attached to \(url)")
    }

    /// The value of `expression` in the page of `session`; throws what it threw.
    func evaluate(_ expression: String, in session: String) async throws -> Any? {
        let result = try await call("Runtime.evaluate", ["expression": expression, "returnByValue": true], session: session)
        if let exception = result["exceptionDetails"] { throw Failure(description: "\(expression): \(exception)") }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Waits up to 60 s, polling, until `condition` is true in the page (an expression that throws,
    /// while the page loads, is not yet true); records and throws when the time runs out.
    func waitFor(_ what: String, in session: String, _ condition: String) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if (try? await evaluate(condition, in: session)) as? Bool == true { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        let page = (try? await evaluate("document.body ? document.body.innerText : ''", in: session)) as? String ?? ""
        Issue.record("waited 60 s for \(what); the page reads: \(page.prefix(3000))")
        throw Failure(description: "waited 60 s for \(what)")
    }

    /// Types `token` into the page's login form once the page shows it, and submits it; waits until
    /// the page shows its figures or, `expectingRefusal`, says the token was refused.
    ///
    /// The page refreshes every 3 s: an unauthenticated refresh under way as the form is submitted
    /// answers 401 after it, and the page then drops the new token. Such a refusal is tried again
    /// (twice at most) where the token is expected to be taken.
    func logIn(_ session: String, token: String, expectingRefusal: Bool = false) async throws {
        let refusal = "document.getElementById('login-problem').textContent === 'That token was refused.'"
        for attempt in 1...3 {
            try await waitFor("the login form", in: session, "document.getElementById('login')?.hidden === false")
            _ = try await evaluate(
                "document.getElementById('token').value = '\(token)'; document.querySelector('#login button').click(); true", in: session)
            if expectingRefusal {
                try await waitFor("the page to say the token was refused", in: session, refusal)
                return
            }
            try await waitFor("the figures or a refusal", in: session, "document.getElementById('status').hidden === false || \(refusal)")
            if try await evaluate("document.getElementById('status').hidden === false", in: session) as? Bool == true { return }
            if attempt == 3 { Issue.record("the page refused the token \(attempt) times") }
        }
        throw Failure(description: "the page refused the token")
    }

    /// Asks Chromium to close, for a `defer`: a thread of its own waits up to 10 s for it to exit,
    /// kills it if it has not, and removes its profile.
    func close() {
        var data = (try? JSONSerialization.data(withJSONObject: ["id": 0, "method": "Browser.close"] as [String: Any])) ?? Data()
        data.append(0)
        writeAll(data, to: commands)
        Glibc.close(commands)
        let (process, profile) = (process, profile)
        Thread {
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning, Date() < deadline { usleep(10_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            removeTree(profile)
        }.start()
    }
}

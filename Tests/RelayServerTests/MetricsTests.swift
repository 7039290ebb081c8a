import CampaignProtocol
import Foundation
import RelayCore
import RelayProcessTestSupport
import RelayServer
import TestTiers
import Testing

/// `/metrics` as Prometheus expects it, checked with promtool (Debian's `prometheus`).
@Suite("Prometheus metrics", .timeLimit(.minutes(10)), .tier(.fast))
struct MetricsTests {
    @Test("promtool check metrics passes on a scrape after traffic; families are sorted and stable; counters, process and route metrics are there")
    func promtoolAccepts() async throws {
        let promtool = try #require(
            ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "promtool is needed (apt-get install prometheus; .ci/run installs it)"
        )
        let server = try await RunningServer.start()
        let http = TestHTTPClient()
        #expect(try await http.get(server.url + "/r/?id=h05,f0190,1").status == 200)
        #expect(
            try await http.post(server.url + "/v1/events", #"[{"kind":"track","action":"click","messageId":"1","deliveryId":"d"}]"#).status == 200)
        #expect(
            try await http.post(
                server.url + "/nms/mobile/1/registerAndroid.jssp", "registrationToken=t&mobileAppUuid=k&newField=1", headers: formHeaders
            ).status == 200)
        #expect(try await http.get(server.url + "/r/?id=bad").status == 400)
        #expect(try await http.get(server.url + "/nope").status == 404)
        let first = try await http.get(server.url + "/metrics").body
        let second = try await http.get(server.url + "/metrics").body
        // A series is made once and kept (RelayMetrics.recordRequest): the second and third
        // scrapes count the ones before them on the same series.
        let third = try await http.get(server.url + "/metrics").body
        #expect(second.contains(#"relay_http_requests_total{route="/metrics",method="GET",status="200"} 1"#), "\(second)")
        #expect(third.contains(#"relay_http_requests_total{route="/metrics",method="GET",status="200"} 2"#), "\(third)")
        #expect(third.contains(#"relay_http_request_duration_seconds_count{route="/metrics"} 2"#), "\(third)")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("scrape-\(UUID().uuidString).txt").path
        try first.write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await RelayBinary.run("/bin/sh", ["-c", "'\(promtool)' check metrics < '\(file)'"])
        #expect(check.status == 0, "promtool: \(check.stdout) \(check.stderr)")

        for line in [
            #"relay_events_ingested_total{kind="track"} 2"#, #"relay_events_ingested_total{kind="register"} 1"#,
            "# TYPE relay_upload_delivered_total counter",
            "# TYPE relay_upload_retries_total counter", "# HELP relay_wal_fsync_seconds", #"relay_build_info{version="\#(RelayVersion.current)"} 1"#,
            "# TYPE process_cpu_seconds_total counter", "# TYPE process_resident_memory_bytes gauge", "# TYPE process_open_fds gauge",
            #"relay_http_requests_total{route="/r",method="GET",status="200"} 1"#,
            #"relay_http_requests_total{route="/r",method="GET",status="400"} 1"#,
            #"relay_http_requests_total{route="/v1/events",method="POST",status="200"} 1"#,
            #"relay_http_request_duration_seconds_count{route="/r"} 2"#,
            #"relay_sdk_unknown_fields_total{field="newField"} 1"#, "relay_wal_last_durable_sequence 3",
            #"relay_http_requests_total{route="(unmatched)",method="GET",status="404"} 1"#,
        ] {
            #expect(first.contains(line), "missing \(line)")
        }
        #expect(!first.contains("relay_wal_durable_sequence"))
        // Every family has HELP, and families come sorted by name, in both scrapes alike.
        let families = { (text: String) in text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) }
        }
        let names = families(first)
        #expect(names == names.sorted())
        #expect(names == families(second))
        for name in names { #expect(first.contains("# HELP \(name) "), "no HELP for \(name)") }
        #expect(try await http.nextSequence(server.url) == 4)
        await http.shutdown()
        await server.stop()
    }

    @Test(
        "relay_upload_oldest_unsent_seconds: the age of the oldest event a failing destination is owed, by destination; 0 for one owed nothing"
    )
    func oldestUnsentAge() async throws {
        // Nothing listens on port 1: every send fails and is retried, so the events stay owed.
        let unreachable = try CampaignHost(parsing: "http://127.0.0.1:1", role: "test")
        let server = try await RunningServer.start { configuration in
            configuration.trackingHost = unreachable
            configuration.marketingHost = unreachable
        }
        let http = TestHTTPClient()
        let old = EventTime(nanosecondsSinceEpoch: EventTime.now().nanosecondsSinceEpoch - 90 * 1_000_000_000).rfc3339
        let newer = EventTime(nanosecondsSinceEpoch: EventTime.now().nanosecondsSinceEpoch - 30 * 1_000_000_000).rfc3339
        let body = """
            [{"kind":"track","action":"open","messageId":"1","deliveryId":"d","time":"\(newer)"},\
            {"kind":"track","action":"open","messageId":"2","deliveryId":"d","time":"\(old)"}]
            """
        #expect(try await http.post(server.url + "/v1/events", body).status == 200)
        // The lane records its oldest owed event as it reads, and a scrape shows its age; the lane
        // reads both events at once and the oldest by position is event 1, 30 s old, however old
        // event 2 is.
        var scrape = ""
        var tracking: Double?
        for _ in 0..<100 {
            scrape = try await http.get(server.url + "/metrics").body
            tracking = Self.value(#"relay_upload_oldest_unsent_seconds{destination="tracking",tenant="default"}"#, in: scrape)
            if let tracking, tracking > 0 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let age = try #require(tracking, "\(scrape)")
        #expect(age >= 30 && age < 60, "the owed event at the lane's position is 30 s old: \(age)")
        #expect(Self.value(#"relay_upload_oldest_unsent_seconds{destination="marketing",tenant="default"}"#, in: scrape) == 0)
        #expect(Self.value(#"relay_upload_oldest_unsent_seconds{destination="relay",tenant="*"}"#, in: scrape) == 0)
        #expect(Self.value(#"relay_upload_backlog{lane="tracking",tenant="default"}"#, in: scrape) == 2)
        #expect(scrape.contains("# TYPE relay_upload_oldest_unsent_seconds gauge"))
        await http.shutdown()
        await server.stop()
    }

    @Test("docs/grafana-dashboard.json: every expression parses (promtool check rules) and names only families a scrape has")
    func grafanaDashboard() async throws {
        let promtool = try #require(
            ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "promtool is needed (apt-get install prometheus; .ci/run installs it)"
        )
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let dashboard = try JSONSerialization.jsonObject(with: Data(contentsOf: root.appendingPathComponent("docs/grafana-dashboard.json")))
        let panels = try #require((dashboard as? [String: Any])?["panels"] as? [[String: Any]])
        let expressions = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        #expect(expressions.count >= 12, "\(expressions)")

        let server = try await RunningServer.start()
        let http = TestHTTPClient()
        #expect(try await http.get(server.url + "/r/?id=h05,f0190,1").status == 200)
        let scrape = try await http.get(server.url + "/metrics").body
        await http.shutdown()
        await server.stop()
        let family = try Regex(#"\b(relay|process)_[a-z_]+"#)
        for expression in expressions {
            for match in expression.matches(of: family) {
                let name = String(expression[match.range]).replacing(/_(bucket|sum|count)$/, with: "")
                #expect(scrape.contains("# TYPE \(name) "), "the dashboard uses \(name), which /metrics does not have: \(expression)")
            }
        }
        // As recording rules, promtool parses every expression ($instance, a dashboard variable, as a regex).
        let rules =
            "groups:\n- name: dashboard\n  rules:\n"
            + expressions.enumerated().map { index, expression in
                "  - record: dashboard_expression_\(index)\n    expr: '\(expression.replacingOccurrences(of: "$instance", with: ".*"))'\n"
            }.joined()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("dashboard-rules-\(UUID().uuidString).yml").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try rules.write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await RelayBinary.run(promtool, ["check", "rules", file])
        #expect(check.status == 0, "promtool check rules: \(check.stdout) \(check.stderr)")
    }

    /// The value of the sample `series` (name and labels exactly as exposed) in a scrape.
    static func value(_ series: String, in scrape: String) -> Double? {
        scrape.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.dropFirst(series.count + 1)) }
    }
}

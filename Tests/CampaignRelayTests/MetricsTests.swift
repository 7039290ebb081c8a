import Foundation
import RelayCore
import RelayServer
import Testing

/// `/metrics` as Prometheus expects it, checked with promtool (Debian's `prometheus`).
@Suite("Prometheus metrics", .timeLimit(.minutes(2)))
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
}

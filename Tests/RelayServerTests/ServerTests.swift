import CampaignProtocol
import Foundation
import Logging
import NIOHTTP1
import RelayCore
import RelayForwarding
import RelayIO
import RelayLog
import RelayProcessTestSupport
import RelaySQLite
import RelayServer
import RelayTestSupport
import TestTiers
import Testing

@Suite("The relay server over loopback", .serialized, .timeLimit(.minutes(10)), .tier(.fast), .seedInFailures)
struct ServerTests {
    @Test("SDK registrations and hits and JSON batches reach the emulator exactly as acknowledged; /v1/deliveries counts them")
    func endToEnd() async throws {
        let emulator = try await RunningEmulator.start()
        let host = try CampaignHost(parsing: emulator.url, role: "test")
        let server = try await RunningServer.start { configuration in
            configuration.trackingHost = host
            configuration.marketingHost = host
            configuration.integrationKeys = ["testIntegrationKey"]
        }
        let http = TestHTTPClient()
        // The SDK vector, sent with '+' for spaces (accepted from clients), forwarded as received.
        let plusForm = androidVectorBody.replacingOccurrences(of: "%20mockOSVersion", with: "+mockOSVersion")
        #expect(try await http.post(server.url + "/nms/mobile/1/registerAndroid.jssp", plusForm, headers: formHeaders).status == 200)
        let iosForm =
            "registrationToken=70757368546f6b656e&mobileAppUuid=testIntegrationKey&userKey=&deviceName=&deviceModel=&deviceBrand=&deviceManufacturer=&osName=iOS&osVersion=iOS%2017.2&osLanguage=en&additionalParams=%3CadditionalParams%3E%3Cparam%20name%3D%22email%22%20value%3D%22email%40email.com%22%20%2F%3E%3C%2FadditionalParams%3E"
        #expect(try await http.post(server.url + "/nms/mobile/1/registerIOS.jssp", iosForm, headers: formHeaders).status == 200)
        #expect(try await http.get(server.url + "/r/?id=hd828,f0190,1").status == 200)
        #expect(try await http.get(server.url + "/r/?id=h9a1c61c0,f0190,2").status == 200)
        #expect(try await http.get(server.url + "/r/test").body.contains("campaign-relay"))
        // 100 hits of delivery f0200 as one JSON batch: ids 1…100, 60 impressions, 30 opens, 10 clicks.
        let batch =
            "["
            + (1...100).map { id in
                let action = id <= 60 ? "impression" : id <= 90 ? "open" : "click"
                return #"{"kind":"track","action":"\#(action)","messageId":"\#(id)","deliveryId":"f0200"}"#
            }.joined(separator: ",") + "]"
        let answer = try await http.post(server.url + "/v1/events", batch)
        #expect(answer.status == 200)
        #expect(answer.body == #"{"accepted":100,"firstSequence":5,"lastSequence":104}"#)

        // Wait for the uploader to forward everything.
        let recorder = emulator.emulator.recorder
        try await waitUntil("102 hits and 2 registrations at the emulator", seconds: 60) {
            let hits = await recorder.acceptedHits
            let registrations = await recorder.acceptedRegistrations.count
            return hits >= 102 && registrations >= 2
        }
        let (registrationsSeen, hitsSeen) = (await recorder.acceptedRegistrations.count, await recorder.acceptedHits)
        if registrationsSeen < 2 || hitsSeen < 102 {
            // Say why: the uploader's own account of its lanes, and what the emulator saw.
            let metrics = try await http.get(server.url + "/metrics").body.split(separator: "\n")
                .filter { $0.hasPrefix("relay_upload") || $0.hasPrefix("relay_dead") || $0.hasPrefix("relay_wal_last") }
            let requests = await recorder.lastRequests(500).map { "\($0.method) \($0.status) \($0.body.prefix(40))" }
            Issue.record("uploader: \(metrics.joined(separator: "; ")); the emulator saw: \(requests.suffix(10))")
        }
        #expect(await recorder.acceptedHits == 102)
        var expected = Set((1...100).map { EmulatorHitKey(messageId: String($0, radix: 16), deliveryId: "f0200", tag: $0 <= 60 ? 1 : 2) })
        expected.insert(EmulatorHitKey(messageId: "d828", deliveryId: "f0190", tag: 1))
        expected.insert(EmulatorHitKey(messageId: "9a1c61c0", deliveryId: "f0190", tag: 2))
        #expect(Set(await recorder.hits.keys.map { EmulatorHitKey(messageId: $0.messageId, deliveryId: $0.deliveryId, tag: $0.tag) }) == expected)
        let forwarded = await recorder.lastRequests(500).filter { $0.method == "POST" }
        #expect(forwarded.map(\.body).contains(plusForm), "the Android registration goes upstream byte for byte as the SDK posted it")
        #expect(forwarded.map(\.body).contains(iosForm))

        // The counts, once the aggregator has caught up.
        var deliveries: [[String: Any]] = []
        try await waitUntil("the aggregator to count through sequence 104", seconds: 60) {
            let object = try JSONSerialization.jsonObject(with: Data(try await http.get(server.url + "/v1/deliveries").body.utf8)) as? [String: Any]
            deliveries = object?["deliveries"] as? [[String: Any]] ?? []
            return (object?["aggregatedThrough"] as? Int) == 104
        }
        let f0200 = try #require(deliveries.first { $0["deliveryId"] as? String == "f0200" })
        #expect([f0200["impressions"], f0200["opens"], f0200["clicks"]].compactMap { $0 as? Int } == [60, 30, 10])
        #expect([f0200["uniqueImpressions"], f0200["uniqueOpens"], f0200["uniqueClicks"]].compactMap { $0 as? Int } == [60, 30, 10])
        let f0190 = try #require(deliveries.first { $0["deliveryId"] as? String == "f0190" })
        // SDK tag 2 is an open (notifyOpening), as Campaign reports it.
        #expect([f0190["impressions"], f0190["opens"], f0190["clicks"]].compactMap { $0 as? Int } == [1, 1, 0])
        let one = try await http.get(server.url + "/v1/deliveries/f0190")
        #expect(one.status == 200 && one.body.contains("\"opens\":1"))
        #expect(try await http.get(server.url + "/v1/deliveries/nope").status == 404)
        let metrics = try await http.get(server.url + "/metrics").body
        #expect(metrics.contains("relay_events_ingested_total{kind=\"track\"} 102"))
        #expect(metrics.contains("relay_wal_fsync_seconds_count"))
        await http.shutdown()
        await server.stop()
        await emulator.stop()
    }

    @Test("HTTP conventions: 405 with Allow, 415 for a body of another type, 400 naming a bad query parameter")
    func httpConventions() async throws {
        let server = try await RunningServer.start()
        let http = TestHTTPClient()
        let wrongMethods: [(HTTPMethod, String, String)] = [
            (.DELETE, "/v1/events", "POST"), (.GET, "/v1/events", "POST"), (.POST, "/healthz", "GET"), (.PUT, "/v1/deliveries/f0190", "GET"),
            (.GET, "/nms/mobile/1/registerIOS.jssp", "POST"), (.POST, "/r/", "GET"), (.HEAD, "/v1/events", "POST"),
        ]
        for (method, path, allow) in wrongMethods {
            let answer = try await http.send(method, server.url + path)
            #expect(answer.status == 405, "\(method) \(path): \(answer.status)")
            #expect(answer.headers.first(name: "Allow") == allow, "\(method) \(path)")
            if method != .HEAD { #expect(answer.body.contains("is not allowed on"), "\(answer.body)") }
        }
        #expect(try await http.send(.GET, server.url + "/nope").status == 404)
        let batch = #"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d"}]"#
        let plain = try await http.post(server.url + "/v1/events", batch, headers: [("Content-Type", "text/plain")])
        #expect(plain.status == 415)
        #expect(plain.body.contains("Content-Type text/plain is not taken"))
        // The type names the form: an array for JSON, one event per line for NDJSON (EventsBodyFormTests).
        let line = #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d"}"#
        for (type, body) in [("application/json", batch), ("application/x-ndjson; charset=utf-8", line), ("Application/JSON", batch)] {
            #expect(try await http.post(server.url + "/v1/events", body, headers: [("Content-Type", type)]).status == 200, "\(type)")
        }
        let form = try await http.post(
            server.url + "/nms/mobile/1/registerIOS.jssp", "registrationToken=t&mobileAppUuid=k", headers: [("Content-Type", "application/json")])
        #expect(form.status == 415)
        #expect(form.body.contains("is not form data"))
        for query in ["/v1/deliveries?limit=abc", "/v1/deliveries?limit=-1", "/v1/deadletters?limit=x"] {
            let answer = try await http.get(server.url + query)
            #expect(answer.status == 400, "\(query)")
            #expect(answer.body.contains("query parameter limit="), "\(answer.body)")
        }
        #expect(try await http.get(server.url + "/v1/deadletters?limit=5").status == 200)
        #expect(try await http.nextSequence(server.url) == 4, "only the three accepted batches were stored")
        await http.shutdown()
        await server.stop()
    }

    @Test("bad input gets a 4xx naming the problem and changes nothing")
    func badInput() async throws {
        let server = try await RunningServer.start { $0.integrationKeys = ["testIntegrationKey"] }
        let http = TestHTTPClient()
        let events = server.url + "/v1/events"
        let cases: [(String, String, String, [(String, String)], Int, String)] = [
            ("POST", events, "[{\"kind\":\"track\",", [], 400, "invalid JSON"),
            (
                "POST", events, "[{\"kind\":\"track\",\"action\":\"open\",\"messageId\":55336,\"deliveryId\":\"f\"}]", [], 400,
                "messageId must be a string, found a number"
            ),
            (
                "POST", events, "[{\"kind\":\"track\",\"action\":\"swipe\",\"messageId\":\"1\",\"deliveryId\":\"f\"}]", [], 400,
                "action \\\"swipe\\\" is not"
            ),
            (
                "POST", events,
                "{\"kind\":\"track\",\"action\":\"open\",\"messageId\":\"1\",\"deliveryId\":\"f\"}\n{\"kind\":\"track\",\"action\":\"open\",\"messageId\":\"a8a\",\"deliveryId\":\"f\"}",
                [], 400, "\"field\":\"messageId\",\"index\":1"
            ),
            ("POST", events, "", [], 400, "the body is empty"),
            (
                "POST", events,
                "["
                    + String(repeating: "{\"kind\":\"track\",\"action\":\"open\",\"messageId\":\"1\",\"deliveryId\":\"f\"},", count: 10_001)
                    .dropLast() + "]", [], 400, "at most 10000"
            ),
            ("POST", events, String(repeating: " ", count: 5 << 20), [], 413, "larger than"),
            (
                "POST", events, "[{\"kind\":\"register\",\"platform\":\"ios\",\"integrationKey\":\"stranger\",\"registrationToken\":\"t\"}]", [], 400,
                "UnknownUUID"
            ),
            (
                "POST", server.url + "/nms/mobile/1/registerIOS.jssp", "registrationToken=%ZZ&mobileAppUuid=testIntegrationKey", formHeaders, 400,
                "percent-encoded"
            ),
            ("POST", server.url + "/nms/mobile/1/registerIOS.jssp", "registrationToken=t&mobileAppUuid=stranger", formHeaders, 400, "UnknownUUID"),
            ("POST", server.url + "/nms/mobile/1/registerAndroid.jssp", "registrationToken=t", formHeaders, 400, "mobileAppUuid"),
            (
                "POST", server.url + "/nms/mobile/1/registerAndroid.jssp", "registrationToken=t&mobileAppUuid=", formHeaders, 400,
                "IntegrationKeyEmpty"
            ),
            (
                "POST", server.url + "/nms/mobile/1/registerIOS.jssp", "mobileAppUuid=testIntegrationKey&userKey=u", formHeaders, 400,
                "registrationToken is missing"
            ),
            (
                "POST", server.url + "/nms/mobile/1/registerIOS.jssp",
                "registrationToken=" + String(repeating: "a", count: 4097) + "&mobileAppUuid=testIntegrationKey", formHeaders, 400,
                "longer than 4096 bytes"
            ),
            ("GET", server.url + "/r/", "", [], 400, "missing ?id="),
            ("GET", server.url + "/r/?id=hd828,f0190,3", "", [], 400, "tag \"3\""),
            ("GET", server.url + "/r/?id=hxyz,f0190,1", "", [], 400, "neither a UUID nor 1 to 16 hex digits"),
            ("GET", server.url + "/r/?id=hd828,f%20190,1", "", [], 400, "deliveryId"),
        ]
        for (method, url, body, headers, status, text) in cases {
            let answer = method == "GET" ? try await http.get(url, headers: headers) : try await http.post(url, body, headers: headers)
            #expect(answer.status == status, "\(url) \(body.prefix(60)): \(answer.status) \(answer.body)")
            #expect(answer.body.contains(text), "\(url) \(body.prefix(60)): \(answer.body.prefix(300))")
        }
        #expect(try await http.nextSequence(server.url) == 1, "nothing may have been stored")
        await http.shutdown()
        await server.stop()
    }

    @Test("seeded fuzz: 10,000 mutated requests never crash the server or get a 5xx")
    func fuzz() async throws {
        let server = try await RunningServer.start()
        let http = TestHTTPClient()
        let bases: [(path: String, method: String, body: String)] = [
            (
                "/v1/events", "POST",
                #"[{"kind":"track","action":"open","messageId":"55336","deliveryId":"f0190","time":"2026-11-21T10:00:00Z"},{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","additionalParams":{"a":"b","n":1}}]"#
            ),
            (
                "/v1/events", "POST",
                "{\"kind\":\"track\",\"action\":\"click\",\"_mId\":\"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6\",\"_dId\":\"d\"}\n{\"kind\":\"track\",\"action\":\"impression\",\"messageId\":\"-1\",\"deliveryId\":\"e\"}\n"
            ),
            ("/nms/mobile/1/registerAndroid.jssp", "POST", androidVectorBody),
            (
                "/nms/mobile/1/registerIOS.jssp", "POST",
                "registrationToken=aa&mobileAppUuid=k&userKey=&additionalParams=%3CadditionalParams%3E%3Cparam%20name%3D%22x%22%20value%3D%22%26amp%3B%22%20%2F%3E%3C%2FadditionalParams%3E"
            ),
            ("/r/?id=", "GET", "hd828,f0190,1"),
        ]
        let seed = TestSeed.make(for: "HTTP fuzz")
        let requests = 10_000
        let outcome = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            var generator = SeededGenerator(seed: seed)
            var statuses: [Int: Int] = [:]
            var worst = ""
            var sent = 0
            func mutated() -> (String, String, [UInt8]) {
                let base = bases[Int(generator.next() % UInt64(bases.count))]
                var bytes = Array(base.body.utf8)
                for _ in 0..<(1 + Int(generator.next() % 4)) where !bytes.isEmpty {
                    let position = Int(generator.next() % UInt64(bytes.count))
                    switch generator.next() % 5 {
                    case 0: bytes[position] ^= UInt8(1 << (generator.next() % 8))
                    case 1: bytes.removeSubrange(position..<min(bytes.count, position + Int(generator.next() % 8) + 1))
                    case 2: bytes.insert(UInt8(generator.next() % 256), at: position)
                    case 3: bytes = Array(bytes.prefix(position))
                    default: bytes.insert(contentsOf: bytes[position..<min(bytes.count, position + 5)], at: position)
                    }
                }
                return (base.path, base.method, bytes)
            }
            func launch() {
                let (path, method, bytes) = mutated()
                group.addTask {
                    if method == "GET" {
                        let query = String(decoding: bytes, as: UTF8.self).addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? ""
                        let answer = try await http.get(server.url + path + query)
                        return (answer.status, answer.body)
                    }
                    let answer = try await http.send(.POST, server.url + path, body: bytes, headers: path.hasPrefix("/nms") ? formHeaders : [])
                    return (answer.status, answer.body)
                }
                sent += 1
            }
            for _ in 0..<8 { launch() }
            while let (status, body) = try await group.next() {
                statuses[status, default: 0] += 1
                if status >= 500 { worst = body }
                if sent < requests { launch() }
            }
            return (statuses, worst)
        }
        let (statuses, worst) = outcome
        #expect(statuses.values.reduce(0, +) == requests)
        #expect(statuses.keys.allSatisfy { $0 < 500 }, "seed \(seed): 5xx answers \(statuses): \(worst)")
        #expect((statuses[400] ?? 0) > requests / 2, "most mutations must be refused: \(statuses)")
        let health = try await http.get(server.url + "/healthz")
        #expect(health.status == 200)
        // The relay's identity, as its data directory keeps it.
        let identity = try #require(RelayIdentity.read(dataDirectory: server.dataDirectory))
        #expect(health.body == #"{"epoch":1,"relayId":"\#(identity.relayID)","status":"ok"}"#)
        #expect(health.headers.first(name: "Content-Type") == "application/json")
        await http.shutdown()
        await server.stop()
    }

    @Test("POST /v1/events refuses what only the relay sets: a request identity, a relay origin; nothing is stored")
    func relaySetFieldsRefused() async throws {
        let server = try await RunningServer.start()
        let http = TestHTTPClient()
        let batch = """
            [{"kind":"track","action":"open","messageId":"1","deliveryId":"d"},
             {"kind":"track","action":"open","messageId":"2","deliveryId":"d","request":{"key":"k","index":0}},
             {"kind":"track","action":"open","messageId":"3","deliveryId":"d","relayOrigin":{"relayId":"598ef5b4-921c-4ba5-b8e1-ef71a5e2a510","epoch":1,"sequence":7}}]
            """
        let answer = try await http.post(server.url + "/v1/events", batch)
        #expect(answer.status == 400)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        let problems = try #require(object["problems"] as? [[String: Any]], "\(answer.body)")
        #expect(problems.map { $0["index"] as? Int } == [1, 2])
        #expect(problems.map { $0["field"] as? String } == ["request", "relayOrigin"])
        #expect(
            problems.last?["message"] as? String == "relayOrigin is set by relays handing events to one another; leave it out")
        let ready = try await http.get(server.url + "/readyz")
        #expect(ready.body.contains(#""lastDurableSequence":0"#), "nothing stored: \(ready.body)")
        await http.shutdown()
        await server.stop()
    }

    @Test("Idempotency-Key: a batch sent twice is stored once, also after a crash between storing and answering")
    func idempotency() async throws {
        let server = try await RunningServer.start()
        let http = TestHTTPClient()
        let batch = (1...5).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"idem"}"# }.joined(separator: "\n")
        let key = [("Idempotency-Key", "order-42")]
        let first = try await http.post(server.url + "/v1/events", batch, headers: key)
        #expect(first.status == 200)
        #expect(first.body == #"{"accepted":5,"firstSequence":1,"lastSequence":5}"#)
        let again = try await http.post(server.url + "/v1/events", batch, headers: key)
        #expect(again.status == 200)
        #expect(again.body == first.body)
        #expect(again.headers.first(name: "Idempotent-Replayed") == "true")
        #expect(try await http.nextSequence(server.url) == 6)
        let other = try await http.post(server.url + "/v1/events", "[]", headers: key)
        #expect(other.status == 422)

        // As if the relay had crashed after storing the events but before recording the answer.
        let path = server.dataDirectory + "/idempotency.sqlite"
        try await BlockingExecutor(name: "test-sqlite").run { () throws(SQLiteError) in
            let database = try SQLiteConnection(path: path)
            try database.execute("UPDATE idempotency_keys SET status = NULL, body = NULL WHERE key = 'order-42'")
            database.close()
        }
        let retried = try await http.post(server.url + "/v1/events", batch, headers: key)
        #expect(retried.status == 200)
        #expect(retried.body == first.body, "the events are found in the log, not appended again")
        #expect(try await http.nextSequence(server.url) == 6)
        await http.shutdown()
        await server.stop()
    }

    @Test(
        "Idempotency-Key after a crash: the retry finds its own events by the identity stored with them, never an identical batch of another client; a client cannot set that identity"
    )
    func idempotencyByStoredIdentity() async throws {
        let server = try await RunningServer.start()
        let http = TestHTTPClient()
        let batch = (1...5).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"twin","time":"2026-11-21T10:00:00Z"}"# }
            .joined(separator: "\n")
        let key = [("Idempotency-Key", "twin-1")]
        #expect(try await http.post(server.url + "/v1/events", batch, headers: key).body == #"{"accepted":5,"firstSequence":1,"lastSequence":5}"#)
        // As if the relay had crashed after recording the key as pending from sequence 6, before
        // its events were stored; then another client stores the very same events.
        let path = server.dataDirectory + "/idempotency.sqlite"
        try await BlockingExecutor(name: "test-sqlite").run { () throws(SQLiteError) in
            let database = try SQLiteConnection(path: path)
            try database.execute("UPDATE idempotency_keys SET status = NULL, body = NULL, start_sequence = 6 WHERE key = 'twin-1'")
            database.close()
        }
        #expect(try await http.post(server.url + "/v1/events", batch).body == #"{"accepted":5,"firstSequence":6,"lastSequence":10}"#)
        let retried = try await http.post(server.url + "/v1/events", batch, headers: key)
        #expect(retried.body == #"{"accepted":5,"firstSequence":11,"lastSequence":15}"#, "the request's own events were never stored: stored now")
        #expect(try await http.nextSequence(server.url) == 16)

        let forged = #"{"kind":"track","action":"open","messageId":"9","deliveryId":"twin","request":{"key":"twin-1","index":0}}"#
        let refused = try await http.post(server.url + "/v1/events", forged)
        #expect(refused.status == 400 && refused.body.contains(#""field":"request""#), "\(refused)")
        await http.shutdown()
        await server.stop()
    }

    @Test("Idempotency-Key after two crashes: the request's events stored in two places are all found, none stored again")
    func idempotencyAfterTwoCrashes() async throws {
        // A log as two crashes leave it: the first stored events 0 and 1 of the request, the retry
        // stored the rest after another client's event, and its answer was lost too.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("twice-\(UUID().uuidString)").path
        let event = { (id: Int) in #"{"kind":"track","action":"open","messageId":"\#(id)","deliveryId":"twice","time":"2026-11-21T10:00:00Z"}"# }
        let stored =
            [0, 1].map { event($0).dropLast() + #","request":{"key":"twice-1","index":\#($0)}}"# }
            + [event(99)] + [2, 3, 4].map { event($0).dropLast() + #","request":{"key":"twice-1","index":\#($0)}}"# }
        let ingest = try await RelayBinary.run(
            try RelayBinary.path(), ["ingest", "-", "--data-dir", directory], input: Data((stored.joined(separator: "\n") + "\n").utf8))
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let server = try await RunningServer.start { $0.dataDirectory = directory }
        let body = (0...4).map(event).joined(separator: "\n")
        let digest = Int64(bitPattern: IdempotencyStore.digest(Array(body.utf8)))
        let path = directory + "/idempotency.sqlite"
        try await BlockingExecutor(name: "test-sqlite").run { () throws(SQLiteError) in
            let database = try SQLiteConnection(path: path)
            try database.execute(
                "INSERT INTO idempotency_keys (key, digest, start_sequence, default_time_ns, status, body, created_ns) VALUES ('twice-1', \(digest), 1, 0, NULL, NULL, \(Int64.max / 2))"
            )
            database.close()
        }
        let http = TestHTTPClient()
        let retried = try await http.post(server.url + "/v1/events", body, headers: [("Idempotency-Key", "twice-1")])
        #expect(retried.body == #"{"accepted":5,"firstSequence":1,"lastSequence":6}"#, "\(retried)")
        #expect(try await http.nextSequence(server.url) == 7, "nothing of the request was stored again")
        await http.shutdown()
        await server.stop()
    }

    @Test(
        "Idempotency-Key per tenant: one key and body on /brand-a/v1/events, /brand-b/v1/events and /v1/events are three requests; a retry replays its own tenant's answer, also after a crash"
    )
    func idempotencyPerTenant() async throws {
        let tenants = try ["brand-a", "brand-b"].map { name in
            TenantConfiguration(destinations: TenantDestinations(tenant: try TenantName(validating: name), trackingHost: nil, marketingHost: nil))
        }
        let server = try await RunningServer.start { $0.tenants = tenants }
        let http = TestHTTPClient()
        let batch = (1...5).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"idem","time":"2026-11-21T10:00:00Z"}"# }
            .joined(separator: "\n")
        let key = [("Idempotency-Key", "order-42")]
        var firsts: [TestHTTPClient.Answer] = []
        for path in ["/brand-a/v1/events", "/brand-b/v1/events", "/v1/events"] {
            firsts.append(try await http.post(server.url + path, batch, headers: key))
        }
        #expect(firsts.map(\.status) == [200, 200, 200])
        #expect(
            firsts.map(\.body) == [
                #"{"accepted":5,"firstSequence":1,"lastSequence":5}"#, #"{"accepted":5,"firstSequence":6,"lastSequence":10}"#,
                #"{"accepted":5,"firstSequence":11,"lastSequence":15}"#,
            ], "three requests, each stored")
        #expect(firsts.map { $0.headers.first(name: "Idempotent-Replayed") } == [nil, nil, nil])
        #expect(try await http.nextSequence(server.url) == 16)

        let retried = try await http.post(server.url + "/brand-a/v1/events", batch, headers: key)
        #expect(retried.status == 200)
        #expect(retried.body == #"{"accepted":5,"firstSequence":1,"lastSequence":5}"#, "brand-a's own answer")
        #expect(retried.headers.first(name: "Idempotent-Replayed") == "true")
        #expect(try await http.nextSequence(server.url) == 16, "nothing stored again")

        // As if the relay had crashed after storing brand-b's events but before recording its
        // answer, with its start recorded at sequence 1: the retry reads the log from brand-a's
        // events, which carry the same key and indexes, and must find brand-b's own.
        let path = server.dataDirectory + "/idempotency.sqlite"
        let changed = try await BlockingExecutor(name: "test-sqlite").run { () throws(SQLiteError) -> Int32 in
            let database = try SQLiteConnection(path: path)
            try database.execute(
                "UPDATE idempotency_keys SET status = NULL, body = NULL, start_sequence = 1 WHERE key = 'brand-b' || char(31) || 'order-42'")
            let changes = database.changes
            database.close()
            return changes
        }
        #expect(changed == 1, "brand-b's key is remembered as \"brand-b\\u{1F}order-42\"")
        let resumed = try await http.post(server.url + "/brand-b/v1/events", batch, headers: key)
        #expect(resumed.status == 200)
        #expect(resumed.body == #"{"accepted":5,"firstSequence":6,"lastSequence":10}"#, "brand-b's events found in the log, not brand-a's")
        #expect(try await http.nextSequence(server.url) == 16)
        await http.shutdown()
        await server.stop()

        let storedTenants = try RelayChainTests.logged(server.dataDirectory).map { $0.event.tenant.displayName }
        #expect(
            storedTenants == Array(repeating: "brand-a", count: 5) + Array(repeating: "brand-b", count: 5) + Array(repeating: "default", count: 5))
    }

    @Test("admin endpoints need the bearer token when one is set; health answers without")
    func adminToken() async throws {
        let server = try await RunningServer.start { $0.adminToken = "a-long-enough-admin-token" }
        let http = TestHTTPClient()
        for path in ["/v1/deliveries", "/v1/deliveries/x", "/v1/deadletters", "/metrics"] {
            #expect(try await http.get(server.url + path).status == 401, "\(path)")
            #expect(try await http.get(server.url + path, headers: [("Authorization", "Bearer wrong")]).status == 401, "\(path)")
        }
        #expect(try await http.get(server.url + "/metrics", headers: [("Authorization", "Bearer a-long-enough-admin-token")]).status == 200)
        #expect(
            try await http.get(server.url + "/v1/deadletters", headers: [("Authorization", "Bearer a-long-enough-admin-token")]).body
                == #"{"deadLetters":[]}"#)
        #expect(try await http.get(server.url + "/healthz").status == 200)
        await http.shutdown()
        await server.stop()
    }
}

extension ServerTests {
    @Test("a full log answers 503 with Retry-After and stores nothing of the refused batch")
    func logFull() async throws {
        let server = try await RunningServer.start { configuration in
            configuration.log = .init(segmentBytes: 4096, maximumLogBytes: 6000, compressionLevel: 0)
            configuration.aggregates = false
        }
        let http = TestHTTPClient()
        var refusal: TestHTTPClient.Answer?
        var accepted = 0
        for batch in 0..<200 {
            let body = (0..<5).map { #"{"kind":"track","action":"open","messageId":"\#(batch * 5 + $0 + 1)","deliveryId":"full"}"# }.joined(
                separator: "\n")
            let answer = try await http.post(server.url + "/v1/events", body)
            if answer.status == 200 {
                accepted += 5
            } else {
                refusal = answer
                break
            }
        }
        let answer = try #require(refusal)
        #expect(answer.status == 503)
        #expect(answer.headers.first(name: "Retry-After") == "30")
        #expect(answer.headers.first(name: "Connection") != "close", "only a relay shutting down closes the connection with its 503")
        #expect(answer.body.contains("log full"))
        let metrics = try await http.get(server.url + "/metrics").body
        #expect(metrics.contains("\nrelay_requests_unavailable_total 1\n"), "\(metrics)")
        #expect(try await http.nextSequence(server.url) == accepted + 1, "the refused batch left nothing behind")
        await http.shutdown()
        await server.stop()
    }

    @Test(
        "a failing fdatasync or a full disk answers 503 with Retry-After, for JSON and SDK requests; nothing of them is stored; intake resumes when the disk does"
    )
    func diskFailure() async throws {
        let fileSystem = FailingFileSystem()
        let server = try await RunningServer.start(fileSystem: fileSystem) { $0.aggregates = false }
        let http = TestHTTPClient()
        func batch(_ first: Int) -> String {
            (first..<(first + 3)).map { #"{"kind":"track","action":"open","messageId":"\#($0)","deliveryId":"disk"}"# }.joined(separator: "\n")
        }
        #expect(try await http.post(server.url + "/v1/events", batch(1)).status == 200)
        #expect(try await http.nextSequence(server.url) == 4)

        for (operation, code, words) in [(FailingFileSystem.Operation.synchronizeData, EIO, "fdatasync"), (.write, ENOSPC, "pwrite")] {
            fileSystem.fail(operation, errno: code)
            let refused = try await http.post(server.url + "/v1/events", batch(100))
            #expect(refused.status == 503, "\(refused)")
            #expect(refused.headers.first(name: "Retry-After") != nil, "\(refused)")
            #expect(refused.body.contains(words), "the answer names the failing call: \(refused.body)")
            let hit = try await http.get(server.url + "/r/?id=h64,disk,1")
            #expect(hit.status == 503 && hit.headers.first(name: "Retry-After") != nil, "\(hit)")
            let registration = try await http.post(
                server.url + "/nms/mobile/1/registerIOS.jssp", "registrationToken=abc&mobileAppUuid=key&userKey=u",
                headers: [("Content-Type", "application/x-www-form-urlencoded")])
            #expect(registration.status == 503 && registration.headers.first(name: "Retry-After") != nil, "\(registration)")
            fileSystem.heal()
            #expect(try await http.nextSequence(server.url) == 4, "nothing of the refused requests became durable")
        }

        let resumed = try await http.post(server.url + "/v1/events", batch(200))
        #expect(resumed.status == 200, "\(resumed)")
        #expect(try await http.nextSequence(server.url) == 7)
        await http.shutdown()
        await server.stop()
        let dump = try await RelayBinary.run(try RelayBinary.path(), ["wal", "dump", "--data-dir", server.dataDirectory])
        let ids = dump.stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["messageId"] as? String
        }
        #expect(ids == ["1", "2", "3", "200", "201", "202"], "\(dump.stdout) \(dump.stderr)")
    }

    @Test("listening beyond loopback without an admin token is refused at start")
    func refusesOpenAdmin() async throws {
        var configuration = RelayServerConfiguration()
        configuration.host = "0.0.0.0"
        configuration.port = 0
        configuration.dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("open-\(UUID().uuidString)").path
        let server = RelayServer(configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        await #expect {
            try await server.run()
        } throws: { error in
            (error as? RelayServer.StartupError)?.description.contains("without --admin-token") == true
        }
        #expect(!FileManager.default.fileExists(atPath: configuration.dataDirectory + "/wal"), "nothing is opened when refusing")
    }
}

/// A hit as compared in tests.
struct EmulatorHitKey: Hashable {
    var messageId: String
    var deliveryId: String
    var tag: Int
}

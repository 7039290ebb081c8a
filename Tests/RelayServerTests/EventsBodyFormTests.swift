import RelayProcessTestSupport
import RelayServer
import TestTiers
import Testing

/// `POST /v1/events`: the Content-Type says the body's form (README, "The HTTP API";
/// docs/openapi.yaml, `postEvents`). `application/json` is a JSON array, NDJSON one event per
/// line, and without a Content-Type the first byte decides; whatever is not of its form gets one
/// 400 naming the forms taken, and nothing is stored.
@Suite("POST /v1/events: the body's form follows its Content-Type", .timeLimit(.minutes(10)), .tier(.fast))
struct EventsBodyFormTests {
    static let event = #"{"kind":"track","action":"open","messageId":"1","deliveryId":"form"}"#
    static let prettyPrinted = """
        {
          "kind": "track",
          "action": "open",
          "messageId": "1",
          "deliveryId": "form"
        }
        """

    /// The 400 of a body-level problem, as the route writes it.
    static func refusal(_ message: String) -> String {
        #"{"error":"1 problem; nothing was stored","problems":[{"field":null,"index":null,"message":"\#(message)"}]}"#
    }

    static let notAnArray = refusal(
        "Content-Type application/json takes a JSON array of events ([{…},{…}], one event as [{…}]), and this body is not an array: wrap the events in [ ], or send them one per line as application/x-ndjson"
    )
    static let overSeveralLines = refusal(
        "the body is one JSON object written over several lines, which is not NDJSON (one event per line): put the event on one line, or send it in an array, [{…}], as application/json"
    )
    static let arrayAsLines = refusal(
        "Content-Type application/x-ndjson takes one event per line (NDJSON), and this body is a JSON array: send it as application/json, or one event per line without [ ]"
    )

    @Test(
        "a bare object: 400 as application/json, 200 as NDJSON or undeclared (one line); pretty-printed: 400 in every form; an array as NDJSON: 400; the Idempotency-Key does not remember a form refusal"
    )
    func formFollowsContentType() async throws {
        let server = try await RunningServer.start { $0.aggregates = false }
        let http = TestHTTPClient()
        let events = server.url + "/v1/events"
        let json = [("Content-Type", "application/json")]
        let lines = [("Content-Type", "application/x-ndjson")]

        let objectAsJSON = try await http.post(events, Self.event, headers: json)
        #expect(objectAsJSON.status == 400)
        #expect(objectAsJSON.body == Self.notAnArray, "\(objectAsJSON.body)")
        let objectAsLine = try await http.post(events, Self.event, headers: lines)
        #expect(objectAsLine.status == 200)
        #expect(objectAsLine.body == #"{"accepted":1,"firstSequence":1,"lastSequence":1}"#, "\(objectAsLine.body)")
        let objectUndeclared = try await http.post(events, Self.event)
        #expect(objectUndeclared.status == 200)
        #expect(objectUndeclared.body == #"{"accepted":1,"firstSequence":2,"lastSequence":2}"#, "\(objectUndeclared.body)")
        let oneInAnArray = try await http.post(events, "[" + Self.event + "]", headers: json)
        #expect(oneInAnArray.body == #"{"accepted":1,"firstSequence":3,"lastSequence":3}"#, "\(oneInAnArray.body)")

        for headers in [lines, [("Content-Type", "application/ndjson")], []] {
            let pretty = try await http.post(events, Self.prettyPrinted, headers: headers)
            #expect(pretty.status == 400, "\(headers)")
            #expect(pretty.body == Self.overSeveralLines, "\(headers): \(pretty.body)")
        }
        let prettyAsJSON = try await http.post(events, Self.prettyPrinted, headers: json)
        #expect(prettyAsJSON.status == 400)
        #expect(prettyAsJSON.body == Self.notAnArray, "\(prettyAsJSON.body)")
        let arrayAsLines = try await http.post(events, "[" + Self.event + "]", headers: lines)
        #expect(arrayAsLines.status == 400)
        #expect(arrayAsLines.body == Self.arrayAsLines, "\(arrayAsLines.body)")

        // The key remembers the body, not its type: sent again with the right type, it is stored.
        let key = ("Idempotency-Key", "form-1")
        #expect(try await http.post(events, Self.event, headers: json + [key]).status == 400)
        let retried = try await http.post(events, Self.event, headers: lines + [key])
        #expect(retried.body == #"{"accepted":1,"firstSequence":4,"lastSequence":4}"#, "\(retried.body)")
        #expect(retried.headers.first(name: "Idempotent-Replayed") == nil)

        #expect(try await http.nextSequence(server.url) == 5, "only the four events taken were stored")
        await http.shutdown()
        await server.stop()
    }

    @Test("the README's example refusal: two bad lines are \"2 problems\", each with its index and field, and nothing is stored")
    func twoProblems() async throws {
        let server = try await RunningServer.start { $0.aggregates = false }
        let http = TestHTTPClient()
        let body = [
            Self.event, #"{"kind":"track","action":"open","messageId":"a8a","deliveryId":"form"}"#,
            #"{"kind":"track","action":"wave","messageId":"2","deliveryId":"form"}"#,
        ].joined(separator: "\n")
        let answer = try await http.post(server.url + "/v1/events", body, headers: [("Content-Type", "application/x-ndjson")])
        #expect(answer.status == 400)
        #expect(answer.body.hasPrefix(#"{"error":"2 problems; nothing was stored","problems":[{"field":"messageId","index":1,"#), "\(answer.body)")
        #expect(answer.body.contains(#""index":2"#), "\(answer.body)")
        #expect(try await http.nextSequence(server.url) == 1, "nothing was stored")
        await http.shutdown()
        await server.stop()
    }
}

import RelayCore
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayEventJSON

/// `TrackingBatchScanner`: the common `POST /v1/events` body decoded from its bytes. It takes the
/// body of every SDK backend and benchmark, and for any body it takes, the general path takes it
/// too and gives the same events; everything else it leaves to the general path.
@Suite(.tier(.fast))
struct TrackingBatchScannerTests {
    static let defaultTime = EventTime(nanosecondsSinceEpoch: 1_795_255_200_123_000_000, utcOffsetMinutes: nil, fractionDigits: 3)

    static func scanned(_ body: String, maximumEvents: Int = 100, admission: EventAdmission = .anyEvent) -> [Event]? {
        Array(body.utf8).withUnsafeBufferPointer {
            TrackingBatchScanner.events(in: $0, defaultTime: defaultTime, maximumEvents: maximumEvents, admission: admission)
        }
    }

    static func general(_ body: String, maximumEvents: Int = 100, admission: EventAdmission = .anyEvent) -> Result<
        [Event], EventBatchDecoder.Problems
    > {
        EventBatchDecoder.decodeInGeneral(Array(body.utf8), defaultTime: defaultTime, maximumEvents: maximumEvents, admission: admission)
    }

    @Test("the benchmark's body and its variants (aliases, key, time, white space) are scanned to the general path's events")
    func commonBodies() throws {
        let body = """
             [ {"kind":"track","action":"impression","messageId":"1000000001","deliveryId":"f4097"},
            {"action" : "open", "_mId":"h3b9aca02", "_dId":"d-2", "kind":"track", "integrationKey":"app-1", "time":"2026-11-25T06:00:00.250+01:00"},\t
            {"kind":"track","action":"click","messageId":"598EF5B4-921C-4BA5-B8E1-EF71A5E2A510","deliveryId":"f.3~_"}]\r\n
            """
        let events = try #require(Self.scanned(body))
        #expect(Self.general(body) == .success(events))
        let hits = events.compactMap { event -> TrackingEvent? in
            if case .tracking(let hit) = event { return hit }
            return nil
        }
        #expect(hits.map(\.action) == [.impression, .open, .click])
        #expect(hits.map(\.messageId.text) == ["1000000001", "h3b9aca02", "598EF5B4-921C-4BA5-B8E1-EF71A5E2A510"])
        #expect(hits.map(\.messageId.identity) == [.integer(1_000_000_001), .integer(0x3b9a_ca02), .uuid("598ef5b4-921c-4ba5-b8e1-ef71a5e2a510")])
        #expect(hits.map(\.deliveryId) == ["f4097", "d-2", "f.3~_"])
        #expect(hits.map(\.integrationKey) == [nil, "app-1", nil])
        #expect(hits[0].time == Self.defaultTime)
        #expect(hits[1].time.rfc3339 == "2026-11-25T06:00:00.250+01:00")
        // A key the admission allows is taken by the scanner too.
        #expect(Self.scanned(body, admission: EventAdmission(integrationKeys: ["app-1"])) == events)
    }

    /// Bodies the scanner leaves to the general path, and whether that path takes them.
    static let leftToTheGeneralPath: [(body: String, generalTakes: Bool)] = [
        (#"[]"#, true),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d\u0031"}]"#, true),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d","integrationKey":"clé"}]"#, true),
        (#"[{"kind":"register","platform":"ios","integrationKey":"app","registrationToken":"t"}]"#, true),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d","origin":{"sequence":3}}]"#, true),
        (#"{"kind":"track","action":"open","messageId":"1","deliveryId":"d"}"#, true),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d"},]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d"}] x"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d"}"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d","kind":"track"}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","_mId":"1","deliveryId":"d"}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","_dId":"d","deliveryId":"d"}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d","extra":"x"}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":1,"deliveryId":"d"}]"#, false),
        (#"[{"kind":"track","action":"opened","messageId":"1","deliveryId":"d"}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1x","deliveryId":"d"}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"99999999999999999999","deliveryId":"d"}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d/e"}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":""}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d","integrationKey":""}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d","integrationKey":"a b"}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1","deliveryId":"d","time":"yesterday"}]"#, false),
        (#"[{"kind":"track","action":"open","messageId":"1"}]"#, false),
        (#"[{"action":"open","messageId":"1","deliveryId":"d"}]"#, false),
        (#"[{"kind":"Track","action":"open","messageId":"1","deliveryId":"d"}]"#, false),
    ]

    @Test("every other body is left to the general path, which decides alone", arguments: leftToTheGeneralPath.indices)
    func leavesTheRestToTheGeneralPath(index: Int) {
        let (body, generalTakes) = Self.leftToTheGeneralPath[index]
        #expect(Self.scanned(body) == nil, "\(body)")
        let general = Self.general(body)
        if case .success = general { #expect(generalTakes, "\(body)") } else { #expect(!generalTakes, "\(body)") }
        // What callers get is the general path's answer, problems and words included.
        #expect(EventBatchDecoder.decode(Array(body.utf8), defaultTime: Self.defaultTime, maximumEvents: 100) == general)
    }

    @Test("over the limit or refused by the admission: left to the general path, which reports it")
    func limitsAndAdmission() {
        let one = #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","integrationKey":"bad"}"#
        let three = "[" + Array(repeating: one, count: 3).joined(separator: ",") + "]"
        #expect(Self.scanned(three, maximumEvents: 3)?.count == 3)
        #expect(Self.scanned(three, maximumEvents: 2) == nil)
        #expect(Self.scanned(three, admission: EventAdmission(integrationKeys: ["app"])) == nil)
        guard case .failure(let problems) = Self.general(three, admission: EventAdmission(integrationKeys: ["app"])) else {
            Issue.record("the general path took a stranger's key")
            return
        }
        #expect(problems.list.map(\.index) == [0, 1, 2])
    }

    @Test("differential: 20,000 generated and mutated bodies, each scanned only when the general path takes it, to the same events")
    func differential() {
        var generator = SeededGenerator(seed: 27)
        var scannedCount = 0
        var leftCount = 0
        for round in 0..<20_000 {
            // A third of clean bodies, a third with members broken, a third with bytes broken.
            var body = Self.generatedBody(breakingMembers: round % 3 == 1, using: &generator)
            if round % 3 == 2 { Self.mutate(&body, using: &generator) }
            let result = body.withUnsafeBufferPointer {
                TrackingBatchScanner.events(in: $0, defaultTime: Self.defaultTime, maximumEvents: 8, admission: .anyEvent)
            }
            guard let result else {
                leftCount += 1
                continue
            }
            scannedCount += 1
            let general = EventBatchDecoder.decodeInGeneral(body, defaultTime: Self.defaultTime, maximumEvents: 8)
            guard general == .success(result) else {
                Issue.record("round \(round): \(String(decoding: body, as: UTF8.self)) scanned to \(result), general path: \(general)")
                return
            }
        }
        // Both sides were exercised in earnest.
        #expect(scannedCount > 6_000)
        #expect(leftCount > 6_000)
    }

    static let names = ["kind", "action", "messageId", "_mId", "deliveryId", "_dId", "integrationKey", "time", "origin", "kinds", ""]
    static let values = [
        "track", "register", "impression", "open", "click", "Open", "1", "-2", "+3", "h0a", "hx", "00042", "9223372036854775808",
        "598ef5b4-921c-4ba5-b8e1-ef71a5e2a510", "f4096", "d.e_f~g", "d e", "", "app", "2026-11-25T06:00:00Z", "2026-11-25t06:00:00.1z",
        "2026-13-25T06:00:00Z", "a\\u0062", "\u{e9}", "\\\"",
    ]
    static let spaces = ["", "", "", " ", "\n", "\t ", "\r\n"]

    /// A JSON array of up to 10 tracking events, members in any order, aliases and white space
    /// anywhere; `breakingMembers`: sometimes a repeated, missing or unknown member, or a value
    /// a rule refuses.
    static func generatedBody(breakingMembers: Bool, using generator: inout SeededGenerator) -> [UInt8] {
        func space() -> String { spaces.randomElement(using: &generator) ?? "" }
        var objects: [String] = []
        for _ in 0..<Int.random(in: 0...10, using: &generator) {
            var members: [(String, String)] = [
                ("kind", "track"), ("action", ["impression", "open", "click"].randomElement(using: &generator) ?? "open"),
                (Bool.random(using: &generator) ? "messageId" : "_mId", String(Int.random(in: -5...5_000_000_000, using: &generator))),
                (Bool.random(using: &generator) ? "deliveryId" : "_dId", "f\(Int.random(in: 0...300, using: &generator))"),
            ]
            if Bool.random(using: &generator) { members.append(("integrationKey", "app")) }
            if Bool.random(using: &generator) { members.append(("time", "2026-11-25T06:00:00.5+02:00")) }
            if breakingMembers, Int.random(in: 0..<4, using: &generator) == 0 {
                // One member's name or value replaced by one from the pools.
                let index = Int.random(in: 0..<members.count, using: &generator)
                if Bool.random(using: &generator) {
                    members[index].0 = names.randomElement(using: &generator) ?? ""
                } else {
                    members[index].1 = values.randomElement(using: &generator) ?? ""
                }
            }
            if breakingMembers, Int.random(in: 0..<8, using: &generator) == 0 { members.removeLast() }
            if breakingMembers, Int.random(in: 0..<8, using: &generator) == 0, let any = members.randomElement(using: &generator) {
                members.append(any)
            }
            members.shuffle(using: &generator)
            let text = members.map { "\(space())\"\($0.0)\"\(space()):\(space())\"\($0.1)\"\(space())" }.joined(separator: ",")
            objects.append("{" + text + "}")
        }
        return Array((space() + "[" + objects.joined(separator: ",\(space())") + "]" + space()).utf8)
    }

    /// One byte changed, removed or inserted, or the body cut short.
    static func mutate(_ body: inout [UInt8], using generator: inout SeededGenerator) {
        guard !body.isEmpty else { return }
        let index = Int.random(in: 0..<body.count, using: &generator)
        let bytes: [UInt8] = Array("{}[],:\" \\0a-_\u{01}".utf8) + [0xC3, 0xFF]
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: body[index] = bytes.randomElement(using: &generator) ?? 0x20
        case 1: body.remove(at: index)
        case 2: body.insert(bytes.randomElement(using: &generator) ?? 0x20, at: index)
        default: body.removeSubrange(index...)
        }
    }
}

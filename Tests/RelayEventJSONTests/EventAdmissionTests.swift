import Foundation
import RelayEventJSON
import TestTiers
import Testing

@testable import RelayCore

/// `EventAdmission`: the integration-key rule and the fields only relays set, applied where events
/// are decoded, with the same words on every way in.
@Suite(.tier(.fast))
struct EventAdmissionTests {
    static let defaultTime = EventTime(nanosecondsSinceEpoch: 1_795_255_200_123_000_000, utcOffsetMinutes: nil, fractionDigits: 3)
    static let known = #"{"kind":"register","platform":"ios","integrationKey":"app","registrationToken":"t1"}"#
    static let stranger = #"{"kind":"register","platform":"ios","integrationKey":"bad","registrationToken":"t2"}"#
    static let keylessHit = #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d"}"#
    static let strangerHit = #"{"kind":"track","action":"open","messageId":"2","deliveryId":"d","integrationKey":"bad"}"#
    static let strangerWithRequest =
        #"{"kind":"track","action":"open","messageId":"3","deliveryId":"d","integrationKey":"bad","request":{"key":"k","index":0}}"#
    static let withOrigin =
        #"{"kind":"track","action":"open","messageId":"4","deliveryId":"d","relayOrigin":{"relayId":"598ef5b4-921c-4ba5-b8e1-ef71a5e2a510","epoch":1,"sequence":7}}"#
    static let unknownKey = #"integration key "bad" is not known to this relay (UnknownUUID)"#

    @Test("ingest lines: a stranger's line is refused with its number and the UnknownUUID words, the rest decoded")
    func linesRefuseUnknownKeys() {
        let text = [Self.known, Self.stranger, "", Self.keylessHit, Self.strangerHit].joined(separator: "\n")
        let decoded = EventLines.decode(Array(text.utf8), defaultTime: Self.defaultTime, admission: EventAdmission(integrationKeys: ["app"]))
        #expect(decoded.eventLines == [1, 4])
        #expect(decoded.rejections.map(\.description) == ["line 2: \(Self.unknownKey)", "line 5: \(Self.unknownKey)"])
        #expect(decoded.rejections.map(\.error.field) == ["integrationKey", "integrationKey"])
        // Without a rule every line decodes.
        #expect(EventLines.decode(Array(text.utf8), defaultTime: Self.defaultTime).events.count == 4)
    }

    @Test("POST /v1/events bodies, array and NDJSON: every problem of every event, in batch order, beside syntax problems", arguments: [true, false])
    func batchesReportEveryProblem(array: Bool) throws {
        let events = [Self.known, Self.strangerWithRequest, #"{"kind":"track"}"#, Self.withOrigin, Self.keylessHit]
        let body = array ? "[" + events.joined(separator: ",") + "]" : events.joined(separator: "\n")
        let admission = EventAdmission(integrationKeys: ["app"], refusesRelaySetFields: true)
        let result = EventBatchDecoder.decode(Array(body.utf8), defaultTime: Self.defaultTime, maximumEvents: 10, admission: admission)
        guard case .failure(let problems) = result else {
            Issue.record("a batch with refused events was taken")
            return
        }
        #expect(problems.list.map(\.index) == [1, 1, 2, 3])
        #expect(problems.list.map(\.field) == ["integrationKey", "request", "action", "relayOrigin"])
        #expect(problems.list[0].message == Self.unknownKey)
        #expect(problems.list[3].message == "relayOrigin is set by relays handing events to one another; leave it out")
        // The same body without the rule fails on its syntax alone.
        guard case .failure(let syntax) = EventBatchDecoder.decode(Array(body.utf8), defaultTime: Self.defaultTime, maximumEvents: 10) else {
            Issue.record("a malformed batch was taken")
            return
        }
        #expect(syntax.list.map(\.index) == [2])
    }

    @Test("a tenant named in an event: taken when declared, refused when not (ingest) or when in a body whose path gives it (POST /v1/events)")
    func tenants() throws {
        let line = #"{"kind":"track","action":"open","messageId":"5","deliveryId":"d","tenant":"brand-a"}"#
        let event = try EventDecoder.decode(line, defaultTime: Self.defaultTime)
        #expect(event.tenant?.text == "brand-a")
        let brandA = try TenantName(validating: "brand-a")
        #expect(EventAdmission(declaredTenants: [brandA]).problems(of: event).isEmpty)
        #expect(EventAdmission.anyEvent.problems(of: event).isEmpty)
        let undeclared = EventAdmission(declaredTenants: [try TenantName(validating: "brand-b")]).problems(of: event)
        #expect(undeclared == [EventInputError(field: "tenant", #"tenant "brand-a" is not declared on this relay"#)])
        // The default: no tenant is declared, and the default tenant's events are taken.
        #expect(EventAdmission().problems(of: event).map(\.field) == ["tenant"])
        #expect(EventAdmission().problems(of: try EventDecoder.decode(Self.keylessHit, defaultTime: Self.defaultTime)).isEmpty)
        let inBody = EventAdmission(refusesRelaySetFields: true, declaredTenants: [brandA]).problems(of: event)
        #expect(inBody == [EventInputError(field: "tenant", "tenant is given by the path (/{tenant}/v1/events); leave it out")])
        // Ingest lines report it with the line number.
        let decoded = EventLines.decode(Array((Self.keylessHit + "\n" + line).utf8), defaultTime: Self.defaultTime, admission: EventAdmission())
        #expect(decoded.rejections.map(\.description) == [#"line 2: tenant "brand-a" is not declared on this relay"#])
        // A name that breaks the rules is refused where it is decoded, naming the rule.
        for (name, rule) in [
            ("Brand-A", "may hold only lowercase letters a-z, digits and '-'"), ("", "must be 1 to 63 characters long"),
            ("status", "is reserved (the default tenant, or the first path segment of one of the relay's own routes)"),
        ] {
            let bad = line.replacingOccurrences(of: "brand-a", with: name)
            let error = try #require(throws: EventInputError.self) { try EventDecoder.decode(bad, defaultTime: Self.defaultTime) }
            #expect(error == EventInputError(field: "tenant", "tenant \(name.quotedForMessage) \(rule)"))
        }
        let number = line.replacingOccurrences(of: #""brand-a""#, with: "7")
        #expect(try #require(throws: EventInputError.self) { try EventDecoder.decode(number, defaultTime: Self.defaultTime) }.field == "tenant")
    }

    @Test("an admission with no keys and no relay-set fields takes everything that decodes")
    func anyEvent() throws {
        let event = try EventDecoder.decode(Self.strangerWithRequest, defaultTime: Self.defaultTime)
        #expect(EventAdmission.anyEvent.problems(of: event).isEmpty)
        #expect(EventAdmission(integrationKeys: ["bad"]).problems(of: event).isEmpty)
        #expect(EventAdmission(integrationKeys: ["bad"], refusesRelaySetFields: true).problems(of: event).map(\.field) == ["request"])
    }
}

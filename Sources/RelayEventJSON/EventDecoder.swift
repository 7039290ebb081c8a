import CampaignProtocol
import CampaignSDKForm
public import RelayCore

/// Turns the relay's JSON event format into validated ``Event`` values.
///
/// The format (one object per event, as in JSONL files, `POST /v1/events` and `wal dump`):
/// - tracking: `{"kind":"track","action":"impression"|"open"|"click","messageId":"55336",
///   "deliveryId":"f0190"}` with optional `integrationKey` and `time` (RFC 3339); `_mId` and `_dId`
///   are accepted as aliases of `messageId` and `deliveryId`;
/// - registration: `{"kind":"register","platform":"ios"|"android","integrationKey":"…",
///   "registrationToken":"…"}` with optional `userKey`, `deviceImei` (Android), `deviceName`,
///   `deviceModel`, `deviceBrand`, `deviceManufacturer`, `osName`, `osVersion`, `osLanguage`,
///   `additionalParams` (an object of strings, numbers and booleans) and `time`; or, for a
///   registration an SDK posted, `{"kind":"register","platform":"ios","sdkForm":"registrationToken=…"}`
///   with optional `time`: the form body as received (``SDKRegistrationForm``).
///
/// Either kind may carry `tenant` (a ``TenantName``; absent for the default tenant) and the fields
/// relays set (`origin`, `request`, `relayOrigin`, `relayHop`), as `wal dump` prints them; which of
/// them a way in takes is ``EventAdmission``'s rule.
///
/// Unknown fields are refused, so a misspelt field never silently loses data.
public enum EventDecoder {
    /// The longest text, in UTF-8 bytes, accepted in any one field.
    public static let maximumFieldBytes = 4096
    /// The most entries accepted in `additionalParams`.
    public static let maximumAdditionalParams = 64

    /// Parses and validates one event from JSON text.
    ///
    /// - Parameter defaultTime: the time given to an event that has no `time` field.
    /// - Throws: ``EventInputError`` naming the field and the rule (JSON syntax errors included).
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>, defaultTime: EventTime) throws(EventInputError) -> Event {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw EventInputError(field: nil, error.description)
        }
        return try decode(value, defaultTime: defaultTime)
    }

    /// Parses and validates one event from a JSON string.
    public static func decode(_ text: String, defaultTime: EventTime) throws(EventInputError) -> Event {
        var copy = text
        let result: Result<Event, EventInputError> = copy.withUTF8 { buffer in
            do throws(EventInputError) { return .success(try decode(buffer, defaultTime: defaultTime)) } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Validates one event already parsed as JSON.
    public static func decode(_ value: JSONValue, defaultTime: EventTime) throws(EventInputError) -> Event {
        guard case .object(var members) = value else {
            throw EventInputError(field: nil, "an event must be a JSON object, found \(value.typeName)")
        }
        var origin: EventOrigin?
        if let index = members.firstIndex(where: { $0.name == "origin" }) {
            origin = try decodeOrigin(members[index].value)
            members.remove(at: index)
        }
        var request: RequestIdentity?
        if let index = members.firstIndex(where: { $0.name == "request" }) {
            request = try decodeRequest(members[index].value)
            members.remove(at: index)
        }
        var chain: ChainOrigin?
        if let index = members.firstIndex(where: { $0.name == "relayOrigin" }) {
            let first = try decodePosition(members[index].value, field: "relayOrigin")
            members.remove(at: index)
            var hop: RelayPosition?
            if let index = members.firstIndex(where: { $0.name == "relayHop" }) {
                hop = try decodePosition(members[index].value, field: "relayHop")
                members.remove(at: index)
            }
            chain = ChainOrigin(first: first, hop: hop)
        } else if members.contains(where: { $0.name == "relayHop" }) {
            throw EventInputError(field: "relayHop", "relayHop needs relayOrigin beside it")
        }
        var tenant: TenantName?
        if let index = members.firstIndex(where: { $0.name == "tenant" }) {
            guard case .string(let text) = members[index].value else {
                throw EventInputError(field: "tenant", "tenant must be a string, found \(members[index].value.typeName)")
            }
            tenant = try TenantName(validating: text)
            members.remove(at: index)
        }
        var event = try decodeKind(members, defaultTime: defaultTime)
        // Each setter copies the event out of the enum and back in: only for what is there.
        if origin != nil { event.origin = origin }
        if request != nil { event.request = request }
        if chain != nil { event.chain = chain }
        if tenant != nil { event.tenant = tenant }
        return event
    }

    /// `{"relayId":"…","epoch":E,"sequence":S}`: an event's place in a relay's log (as `wal dump`
    /// prints `relayOrigin` and `relayHop`).
    private static func decodePosition(_ value: JSONValue, field: String) throws(EventInputError) -> RelayPosition {
        guard case .object(let members) = value, members.count == 3,
            case .string(let relayID)? = members.first(where: { $0.name == "relayId" })?.value,
            case .number(let epochText)? = members.first(where: { $0.name == "epoch" })?.value, let epoch = UInt32(epochText),
            case .number(let sequenceText)? = members.first(where: { $0.name == "sequence" })?.value, let sequence = UInt64(sequenceText)
        else {
            throw EventInputError(field: field, "\(field) must be {\"relayId\":UUID,\"epoch\":E,\"sequence\":S}")
        }
        return try RelayPosition(relayID: relayID, epoch: epoch, sequence: sequence, field: field)
    }

    /// `"request":{"key":K,"index":N}`: the keyed request the event was stored for (as `wal dump`
    /// prints it).
    private static func decodeRequest(_ value: JSONValue) throws(EventInputError) -> RequestIdentity {
        guard case .object(let members) = value, members.count == 2,
            let key = members.first(where: { $0.name == "key" }), case .string(let text) = key.value, !text.isEmpty, text.utf8.count <= 255,
            let index = members.first(where: { $0.name == "index" }), case .number(let literal) = index.value, let number = Int(literal), number >= 0
        else {
            throw EventInputError(field: "request", "request must be {\"key\":K,\"index\":N} with K of 1 to 255 bytes and N from 0")
        }
        return RequestIdentity(key: text, index: number)
    }

    /// `"origin":{"sequence":N}`: the entry of this log the event is a copy of.
    private static func decodeOrigin(_ value: JSONValue) throws(EventInputError) -> EventOrigin {
        guard case .object(let members) = value, members.count == 1, members[0].name == "sequence", case .number(let literal) = members[0].value,
            let sequence = UInt64(literal), sequence >= 1
        else {
            throw EventInputError(field: "origin", "origin must be {\"sequence\":N} with N a sequence number of this log (1 or more)")
        }
        return EventOrigin(sequence: sequence)
    }

    private static func decodeKind(_ members: [JSONMember], defaultTime: EventTime) throws(EventInputError) -> Event {
        var kind: String?
        for member in members where member.name == "kind" {
            kind = try text(member, allowEmpty: false)
        }
        switch kind {
        case "track": return .tracking(try decodeTracking(members, defaultTime: defaultTime))
        case "register": return .registration(try decodeRegistration(members, defaultTime: defaultTime))
        case nil: throw EventInputError(field: "kind", "kind is required (\"track\" or \"register\")")
        case let other?: throw EventInputError(field: "kind", "kind \(other.quotedForMessage) is not \"track\" or \"register\"")
        }
    }

    static let trackingFields = ["kind", "action", "messageId", "_mId", "deliveryId", "_dId", "integrationKey", "time"]

    private static func decodeTracking(_ members: [JSONMember], defaultTime: EventTime) throws(EventInputError) -> TrackingEvent {
        var action: TrackingAction?
        var messageId: (name: String, text: String)?
        var deliveryId: (name: String, text: String)?
        var integrationKey: String?
        var time: EventTime?
        for member in members {
            switch member.name {
            case "kind": continue
            case "action":
                let name = try text(member, allowEmpty: true)
                guard let parsed = TrackingAction(rawValue: name) else {
                    throw EventInputError(field: "action", "action \(name.quotedForMessage) is not \"impression\", \"open\" or \"click\"")
                }
                action = parsed
            case "messageId", "_mId":
                if let previous = messageId {
                    throw EventInputError(field: "messageId", "\(previous.name) and \(member.name) are both given; give one")
                }
                messageId = (member.name, try text(member, allowEmpty: true))
            case "deliveryId", "_dId":
                if let previous = deliveryId {
                    throw EventInputError(field: "deliveryId", "\(previous.name) and \(member.name) are both given; give one")
                }
                deliveryId = (member.name, try text(member, allowEmpty: true))
            case "integrationKey":
                integrationKey = try identifier(member)
            case "time":
                time = try EventTime(rfc3339: text(member, allowEmpty: false), field: "time")
            default:
                throw unknownField(member.name, kind: "track", allowed: trackingFields)
            }
        }
        guard let action else { throw EventInputError(field: "action", "action is required (\"impression\", \"open\" or \"click\")") }
        guard let messageId else { throw EventInputError(field: "messageId", "messageId (or _mId) is required") }
        guard let deliveryId else { throw EventInputError(field: "deliveryId", "deliveryId (or _dId) is required") }
        // Messages name the field as the sender wrote it (`_mId`); `field` is always the canonical name.
        let validMessageId: MessageID
        do {
            validMessageId = try MessageID(messageId.text, field: messageId.name)
        } catch {
            throw EventInputError(field: "messageId", error.message)
        }
        let validDeliveryId: String
        do {
            validDeliveryId = try TrackingHitID.validatedDeliveryID(deliveryId.text, field: deliveryId.name)
        } catch {
            throw EventInputError(field: "deliveryId", error.message)
        }
        return TrackingEvent(
            action: action, messageId: validMessageId, deliveryId: validDeliveryId, integrationKey: integrationKey, time: time ?? defaultTime)
    }

    static let registrationFields =
        ["kind", "platform", "integrationKey", "registrationToken"] + Registration.optionalTextFields.map(\.name) + [
            "additionalParams", "time", "sdkForm",
        ]

    private static func decodeRegistration(_ members: [JSONMember], defaultTime: EventTime) throws(EventInputError) -> Registration {
        var platform: Platform?
        var integrationKey: String?
        var token: String?
        var optionalTexts: [String: String] = [:]
        var params: [AdditionalParameter]?
        var time: EventTime?
        var sdkForm: String?
        for member in members {
            switch member.name {
            case "kind": continue
            case "sdkForm":
                guard case .string(let body) = member.value else {
                    throw EventInputError(field: "sdkForm", "sdkForm must be a string, found \(member.value.typeName)")
                }
                sdkForm = body
            case "platform":
                let name = try text(member, allowEmpty: true)
                guard let parsed = Platform(rawValue: name) else {
                    throw EventInputError(field: "platform", "platform \(name.quotedForMessage) is not \"ios\" or \"android\"")
                }
                platform = parsed
            case "integrationKey": integrationKey = try text(member, allowEmpty: false)
            case "registrationToken": token = try text(member, allowEmpty: false)
            case "additionalParams": params = try additionalParams(member.value)
            case "time": time = try EventTime(rfc3339: text(member, allowEmpty: false), field: "time")
            default:
                guard Registration.optionalTextFields.contains(where: { $0.name == member.name }) else {
                    throw unknownField(member.name, kind: "register", allowed: registrationFields)
                }
                optionalTexts[member.name] = try text(member, allowEmpty: true)
            }
        }
        guard let platform else { throw EventInputError(field: "platform", "platform is required (\"ios\" or \"android\")") }
        if let sdkForm {
            // The body is the registration: fields beside it could only contradict it.
            if let other = members.first(where: { !["kind", "platform", "sdkForm", "time"].contains($0.name) }) {
                throw EventInputError(field: other.name, "\(other.name) cannot be given with sdkForm (the form body holds every field)")
            }
            return try SDKRegistrationForm(body: sdkForm, platform: platform, time: time ?? defaultTime).registration
        }
        guard let integrationKey else { throw EventInputError(field: "integrationKey", "integrationKey is required for a registration") }
        guard let token else { throw EventInputError(field: "registrationToken", "registrationToken is required for a registration") }
        var registration = Registration(platform: platform, integrationKey: integrationKey, registrationToken: token, time: time ?? defaultTime)
        for field in Registration.optionalTextFields {
            registration[keyPath: field.keyPath] = optionalTexts[field.name]
        }
        registration.additionalParams = params
        return registration
    }

    private static func unknownField(_ name: String, kind: String, allowed: [String]) -> EventInputError {
        EventInputError(field: name, "unknown field \(name.quotedForMessage) for kind \"\(kind)\" (allowed: \(allowed.joined(separator: ", ")))")
    }

    private static func text(_ member: JSONMember, allowEmpty: Bool) throws(EventInputError) -> String {
        guard case .string(let value) = member.value else {
            throw EventInputError(field: member.name, "\(member.name) must be a string, found \(member.value.typeName)")
        }
        if !allowEmpty, value.isEmpty { throw EventInputError(field: member.name, "\(member.name) is empty") }
        guard value.utf8.count <= maximumFieldBytes else {
            throw EventInputError(field: member.name, "\(member.name) is longer than \(maximumFieldBytes) bytes")
        }
        return value
    }

    /// Tracking integration keys: non-empty, no control characters or white space.
    private static func identifier(_ member: JSONMember) throws(EventInputError) -> String {
        let value = try text(member, allowEmpty: false)
        if let bad = value.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            throw EventInputError(
                field: member.name,
                "\(member.name) \(value.quotedForMessage) contains a space or control character (U+\(String(bad.value, radix: 16, uppercase: true)))"
            )
        }
        return value
    }

    private static func additionalParams(_ value: JSONValue) throws(EventInputError) -> [AdditionalParameter] {
        guard case .object(let members) = value else {
            throw EventInputError(field: "additionalParams", "additionalParams must be an object, found \(value.typeName)")
        }
        guard members.count <= maximumAdditionalParams else {
            throw EventInputError(field: "additionalParams", "additionalParams has more than \(maximumAdditionalParams) entries")
        }
        var params: [AdditionalParameter] = []
        params.reserveCapacity(members.count)
        for member in members {
            let path = "additionalParams.\(member.name)"
            guard !member.name.isEmpty else { throw EventInputError(field: "additionalParams", "additionalParams has an entry with an empty name") }
            guard member.name.utf8.count <= maximumFieldBytes else {
                throw EventInputError(field: "additionalParams", "an additionalParams name is longer than \(maximumFieldBytes) bytes")
            }
            switch member.value {
            case .string(let text):
                guard text.utf8.count <= maximumFieldBytes else {
                    throw EventInputError(field: path, "\(path) is longer than \(maximumFieldBytes) bytes")
                }
                params.append(AdditionalParameter(name: member.name, value: .string(text)))
            case .number(let literal): params.append(AdditionalParameter(name: member.name, value: .number(literal)))
            case .bool(let flag): params.append(AdditionalParameter(name: member.name, value: .bool(flag)))
            default:
                throw EventInputError(field: path, "\(path) must be a string, number or boolean, found \(member.value.typeName)")
            }
        }
        return params
    }
}

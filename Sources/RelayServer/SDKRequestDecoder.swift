public import RelayCore
import RelayForwarding

/// Turns what an SDK sends to a Campaign host into relay events, validated by the same rules as
/// the JSON format (``EventDecoder``), so every ingest path accepts and refuses the same things.
public enum SDKRequestDecoder {
    /// The form fields a registration may carry.
    static let registrationFields: Set<String> = [
        "registrationToken", "mobileAppUuid", "userKey", "deviceImei", "deviceName", "deviceModel", "deviceBrand", "deviceManufacturer",
        "osName", "osVersion", "osLanguage", "additionalParams",
    ]

    /// A registration from a `registerIOS.jssp` / `registerAndroid.jssp` form body (`%XX` and `+`
    /// accepted; `additionalParams` in either XML dialect).
    public static func registration(formBody: String, platform: Platform, defaultTime: EventTime) throws(EventInputError) -> Event {
        var members: [JSONMember] = [JSONMember(name: "kind", value: .string("register")), JSONMember(name: "platform", value: .string(platform.rawValue))]
        var seen = Set<String>()
        for pair in formBody.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = FormEncoding.decode(parts[0]), let value = FormEncoding.decode(parts.count == 2 ? parts[1] : "") else {
                throw EventInputError(field: nil, "form field \(String(pair.prefix(40)).quotedForError) is not valid percent-encoded UTF-8")
            }
            guard registrationFields.contains(name) else {
                throw EventInputError(field: name, "unknown form field \(name.quotedForError) (allowed: \(registrationFields.sorted().joined(separator: ", ")))")
            }
            guard seen.insert(name).inserted else { throw EventInputError(field: name, "form field \(name) is given twice") }
            switch name {
            case "mobileAppUuid":
                members.append(JSONMember(name: "integrationKey", value: .string(value)))
            case "deviceImei" where platform == .ios:
                continue  // the iOS SDK has no IMEI; never forwarded on iOS
            case "additionalParams":
                members.append(JSONMember(name: "additionalParams", value: .object(try additionalParams(value))))
            default:
                members.append(JSONMember(name: name, value: .string(value)))
            }
        }
        guard seen.contains("mobileAppUuid") else { throw EventInputError(field: "integrationKey", "mobileAppUuid (the integration key) is required") }
        return try EventDecoder.decode(.object(members), defaultTime: defaultTime)
    }

    /// A tracking hit from the `id` of `GET /r/?id=h{messageId},{deliveryId},{tag}`.
    ///
    /// The message id arrives in wire form (hex or UUID) and is kept so that it goes out unchanged:
    /// a hex id is stored as the decimal whose wire form it is. Tag 1 is an impression, tag 2 a click.
    public static func trackingHit(id: String, defaultTime: EventTime) throws(EventInputError) -> Event {
        guard id.hasPrefix("h") else { throw EventInputError(field: "id", "id \(id.quotedForError) must start with h: h{messageId},{deliveryId},{tag}") }
        let parts = id.dropFirst().split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw EventInputError(field: "id", "id \(id.quotedForError) must be h{messageId},{deliveryId},{tag}") }
        let action: String
        switch parts[2] {
        case "1": action = "impression"
        case "2": action = "click"
        default: throw EventInputError(field: "tag", "tag \(String(parts[2]).quotedForError) is not 1 (received) or 2 (opened/clicked)")
        }
        let wire = String(parts[0])
        let messageId: String
        if MessageID.isUUID(wire) {
            messageId = wire
        } else if !wire.isEmpty, wire.utf8.count <= 16, let value = UInt64(wire, radix: 16) {
            messageId = String(Int64(bitPattern: value))
        } else {
            throw EventInputError(field: "messageId", "message id \(wire.quotedForError) is neither a UUID nor 1 to 16 hex digits")
        }
        return try EventDecoder.decode(
            .object([
                JSONMember(name: "kind", value: .string("track")), JSONMember(name: "action", value: .string(action)),
                JSONMember(name: "messageId", value: .string(messageId)), JSONMember(name: "deliveryId", value: .string(String(parts[1]))),
            ]),
            defaultTime: defaultTime
        )
    }

    /// The entries of an `additionalParams` XML string: `<additionalParams>` or
    /// `<additionalParameters>` holding `<param name="…" value="…" />` elements.
    static func additionalParams(_ xml: String) throws(EventInputError) -> [JSONMember] {
        var scanner = XMLScanner(Array(xml.utf8))
        func fail(_ rule: String) -> EventInputError {
            EventInputError(field: "additionalParams", "additionalParams is not the SDK's XML: \(rule) at byte \(scanner.index)")
        }
        scanner.skipSpaces()
        if scanner.atEnd { return [] }
        guard let root = scanner.openTag() else { throw fail("expected <additionalParams> or <additionalParameters>") }
        guard root.name == "additionalParams" || root.name == "additionalParameters" else { throw fail("unexpected root element <\(root.name)>") }
        var members: [JSONMember] = []
        if root.selfClosing { return [] }
        while true {
            scanner.skipSpaces()
            if scanner.closeTag(root.name) { break }
            guard let element = scanner.openTag(), element.name == "param", element.selfClosing else { throw fail("expected <param name=\"…\" value=\"…\"/>") }
            guard let name = element.attributes["name"], let value = element.attributes["value"] else { throw fail("a <param> needs name and value") }
            guard !members.contains(where: { $0.name == name }) else { throw fail("parameter \(name.quotedForError) given twice") }
            members.append(JSONMember(name: name, value: .string(value)))
        }
        scanner.skipSpaces()
        guard scanner.atEnd else { throw fail("text after </\(root.name)>") }
        return members
    }
}

extension String {
    var quotedForError: String { JSONText.quoted(utf8.count > 64 ? String(decoding: utf8.prefix(64), as: UTF8.self) + "…" : self) }
}

extension MessageID {
    /// Whether `text` is an `8-4-4-4-12` hex UUID.
    static func isUUID(_ text: String) -> Bool {
        guard let id = try? MessageID(text), case .uuid = id.form else { return false }
        return true
    }
}

/// Just enough XML for the SDKs' `additionalParams`: elements with double-quoted attributes and the
/// five predefined entities plus numeric character references.
struct XMLScanner {
    struct Tag {
        var name: String
        var attributes: [String: String]
        var selfClosing: Bool
    }

    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index >= bytes.count }

    mutating func skipSpaces() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D { index += 1 }
    }

    mutating func name() -> String? {
        let start = index
        while index < bytes.count, bytes[index] != 0x20, bytes[index] != UInt8(ascii: ">"), bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: "=") {
            index += 1
        }
        return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
    }

    mutating func openTag() -> Tag? {
        let start = index
        guard index < bytes.count, bytes[index] == UInt8(ascii: "<"), index + 1 < bytes.count, bytes[index + 1] != UInt8(ascii: "/") else { return nil }
        index += 1
        guard let tagName = name() else {
            index = start
            return nil
        }
        var attributes: [String: String] = [:]
        while true {
            skipSpaces()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: ">") {
                index += 1
                return Tag(name: tagName, attributes: attributes, selfClosing: false)
            }
            if bytes[index] == UInt8(ascii: "/") {
                guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ">") else { return nil }
                index += 2
                return Tag(name: tagName, attributes: attributes, selfClosing: true)
            }
            guard let attribute = name(), index < bytes.count, bytes[index] == UInt8(ascii: "=") else { return nil }
            index += 1
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            index += 1
            let valueStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") { index += 1 }
            guard index < bytes.count, let value = Self.unescape(bytes[valueStart..<index]), attributes[attribute] == nil else { return nil }
            attributes[attribute] = value
            index += 1
        }
    }

    mutating func closeTag(_ expected: String) -> Bool {
        let text = Array("</\(expected)>".utf8)
        guard index + text.count <= bytes.count, Array(bytes[index..<(index + text.count)]) == text else { return false }
        index += text.count
        return true
    }

    static func unescape(_ raw: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            if byte == UInt8(ascii: "<") { return nil }
            guard byte == UInt8(ascii: "&") else {
                out.append(byte)
                index += 1
                continue
            }
            guard let semicolon = raw[index...].firstIndex(of: UInt8(ascii: ";")) else { return nil }
            let entity = String(decoding: raw[(index + 1)..<semicolon], as: UTF8.self)
            switch entity {
            case "amp": out.append(UInt8(ascii: "&"))
            case "quot": out.append(UInt8(ascii: "\""))
            case "apos": out.append(UInt8(ascii: "'"))
            case "lt": out.append(UInt8(ascii: "<"))
            case "gt": out.append(UInt8(ascii: ">"))
            default:
                let scalarValue: UInt32?
                if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                    scalarValue = UInt32(entity.dropFirst(2), radix: 16)
                } else if entity.hasPrefix("#") {
                    scalarValue = UInt32(entity.dropFirst())
                } else {
                    scalarValue = nil
                }
                guard let value = scalarValue, let scalar = Unicode.Scalar(value) else { return nil }
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
            }
            index = semicolon + 1
        }
        return String(validating: out, as: UTF8.self)
    }
}

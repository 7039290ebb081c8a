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
        while index < bytes.count, bytes[index] != 0x20, bytes[index] != UInt8(ascii: ">"), bytes[index] != UInt8(ascii: "/"),
            bytes[index] != UInt8(ascii: "=")
        {
            index += 1
        }
        return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
    }

    mutating func openTag() -> Tag? {
        let start = index
        guard index < bytes.count, bytes[index] == UInt8(ascii: "<"), index + 1 < bytes.count, bytes[index + 1] != UInt8(ascii: "/") else {
            return nil
        }
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

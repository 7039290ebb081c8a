import RelayCore

/// `JSONParser` on any bytes. A value it accepts is printed (numbers by their literal, strings
/// escaped by `JSONText`) and parsed again: the two values must be equal, and nesting must stay
/// within ``JSONParser/maximumDepth``.
enum JSONValueTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard let value = try? JSONParser.parse(bytes) else { return }
        let depth = Self.depth(value)
        try require(depth <= JSONParser.maximumDepth, .jsonValue, "accepted nesting \(depth) over \(JSONParser.maximumDepth)")
        var printed = ""
        print(value, to: &printed)
        let again: JSONValue
        do {
            again = try JSONParser.parse(printed)
        } catch {
            throw FuzzFinding(.jsonValue, "its own printing \(printed.debugDescription) does not parse: \(error)")
        }
        try require(again == value, .jsonValue, "printing and parsing changed \(value) into \(again)")
    }

    static func depth(_ value: JSONValue) -> Int {
        switch value {
        case .array(let items): 1 + (items.map(depth).max() ?? 0)
        case .object(let members): 1 + (members.map { depth($0.value) }.max() ?? 0)
        default: 0
        }
    }

    static func print(_ value: JSONValue, to out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .number(let literal): out += literal
        case .string(let text): JSONText.appendQuoted(text, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                print(item, to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                JSONText.appendQuoted(member.name, to: &out)
                out += ":"
                print(member.value, to: &out)
            }
            out += "}"
        }
    }
}

extension JSONValue: Encodable {
    /// A JSON value inside an API object (a dead letter's event). A number is written from its
    /// literal as an integer when it is one, else as a `Double`: `-1.5e3` comes out as `-1500`,
    /// the same number in another spelling.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let flag):
            var container = encoder.singleValueContainer()
            try container.encode(flag)
        case .string(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .number(let literal):
            var container = encoder.singleValueContainer()
            if let integer = Int64(literal) {
                try container.encode(integer)
            } else if let unsigned = UInt64(literal) {
                try container.encode(unsigned)
            } else {
                try container.encode(Double(literal) ?? 0)
            }
        case .array(let items):
            var container = encoder.unkeyedContainer()
            for item in items { try container.encode(item) }
        case .object(let members):
            var container = encoder.container(keyedBy: MemberName.self)
            for member in members { try container.encode(member.value, forKey: MemberName(member.name)) }
        }
    }

    /// An object member's name as a coding key.
    private struct MemberName: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

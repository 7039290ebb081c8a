/// A parsed JSON value whose objects keep their members in document order.
///
/// Order matters here: Android registrations send `additionalParams` in map order, and the log
/// must reproduce what it was given.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, as its literal text (never rounded through a `Double`).
    case number(String)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object's members in document order (names are unique: the parser refuses duplicates).
    case object([JSONMember])

    /// The JSON type's name, for error messages ("expected a string, found a number").
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// One `"name": value` member of a JSON object.
public struct JSONMember: Sendable, Hashable {
    /// The member's name.
    public var name: String
    /// The member's value.
    public var value: JSONValue

    /// Creates a member.
    public init(name: String, value: JSONValue) {
        self.name = name
        self.value = value
    }
}

/// One entry of a registration's `additionalParams`, with its JSON type kept.
public struct AdditionalParameter: Sendable, Hashable {
    /// The value of a parameter: a JSON string, number (its literal text) or boolean.
    public enum Value: Sendable, Hashable {
        /// A JSON string.
        case string(String)
        /// A JSON number, as its literal text (`3233`, `1.5e3`), so it is reproduced exactly.
        case number(String)
        /// A JSON boolean.
        case bool(Bool)

        /// The text sent in the registration's XML `value` attribute.
        public var wireText: String {
            switch self {
            case .string(let text), .number(let text): text
            case .bool(let flag): flag ? "true" : "false"
            }
        }
    }

    /// The parameter's name.
    public var name: String
    /// The parameter's value.
    public var value: Value

    /// Creates a parameter.
    public init(name: String, value: Value) {
        self.name = name
        self.value = value
    }
}

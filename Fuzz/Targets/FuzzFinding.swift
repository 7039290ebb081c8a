/// A property a fuzz target states did not hold for an input: a parser answered, but wrongly.
public struct FuzzFinding: Error, Sendable, CustomStringConvertible {
    /// The target that found it.
    public var target: FuzzTarget
    /// The property that broke, with the values that broke it.
    public var property: String

    /// A finding of `target`.
    public init(_ target: FuzzTarget, _ property: String) {
        self.target = target
        self.property = property
    }

    /// `<target>: <property>`.
    public var description: String { "\(target.rawValue): \(property)" }
}

/// Throws a finding of `target` unless `condition` holds.
func require(_ condition: Bool, _ target: FuzzTarget, _ property: @autoclosure () -> String) throws(FuzzFinding) {
    if !condition { throw FuzzFinding(target, property()) }
}

/// A key file that cannot be used: which file, which line, and what is wrong with it.
public struct LogKeyFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The key file's path.
    public var path: String
    /// The line (from 1), when the fault is on one.
    public var line: Int?
    /// What is wrong, and what to do.
    public var problem: String

    /// Creates an error.
    public init(path: String, line: Int?, problem: String) {
        self.path = path
        self.line = line
        self.problem = problem
    }

    public var description: String {
        if let line { return "encryption key file \(path), line \(line), \(problem)" }
        return "encryption key file \(path) \(problem)"
    }
}
